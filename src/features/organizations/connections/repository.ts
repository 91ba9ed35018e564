import type { Executor } from '../../../platform/db/database.js';
import type { KeysetWindow } from '../../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../../platform/pagination/repository.js';

/** The one writer of `sso_connections` (docs/architecture.md, "Tables and their owners"). */

export type ConnectionType = 'saml' | 'oidc';

/** Which IdP attribute carries each profile field (SAML attribute names, OIDC claim names). */
export interface AttributeMapping {
  email?: string;
  givenName?: string;
  familyName?: string;
}

/** One line of a group mapping: members of `group` get `role` (the first line that matches wins). */
export interface GroupRole {
  group: string;
  role: string;
}

export interface ConnectionRow {
  id: string;
  organizationId: string;
  type: ConnectionType;
  name: string;
  enabled: boolean;
  defaultRole: string;
  attributeMapping: AttributeMapping;
  /** The IdP attribute (claim) carrying the person's groups; null: roles do not follow groups. */
  groupAttribute: string | null;
  groupRoles: GroupRole[];
  idpEntityId: string | null;
  ssoUrl: string | null;
  signingCertificates: string[];
  wantEncrypted: boolean;
  decryptionCertificate: string | null;
  sealedDecryptionKey: string | null;
  allowIdpInitiated: boolean;
  issuer: string | null;
  clientId: string | null;
  sealedClientSecret: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Everything but the ids and the creation instant: what an insert writes and an update rewrites. */
export type ConnectionFields = Omit<ConnectionRow, 'id' | 'organizationId' | 'createdAt' | 'updatedAt'>;

const columns = [
  'id',
  'organization_id as organizationId',
  'type',
  'name',
  'enabled',
  'default_role as defaultRole',
  'attribute_mapping as attributeMapping',
  'group_attribute as groupAttribute',
  'group_roles as groupRoles',
  'idp_entity_id as idpEntityId',
  'sso_url as ssoUrl',
  'signing_certificates as signingCertificates',
  'want_encrypted as wantEncrypted',
  'decryption_certificate as decryptionCertificate',
  'sealed_decryption_key as sealedDecryptionKey',
  'allow_idp_initiated as allowIdpInitiated',
  'issuer',
  'client_id as clientId',
  'sealed_client_secret as sealedClientSecret',
  'created_at as createdAt',
  'updated_at as updatedAt',
] as const;

function toColumns(f: ConnectionFields) {
  return {
    type: f.type,
    name: f.name,
    enabled: f.enabled,
    default_role: f.defaultRole,
    attribute_mapping: JSON.stringify(f.attributeMapping),
    group_attribute: f.groupAttribute,
    group_roles: JSON.stringify(f.groupRoles),
    idp_entity_id: f.idpEntityId,
    sso_url: f.ssoUrl,
    signing_certificates: JSON.stringify(f.signingCertificates),
    want_encrypted: f.wantEncrypted,
    decryption_certificate: f.decryptionCertificate,
    sealed_decryption_key: f.sealedDecryptionKey,
    allow_idp_initiated: f.allowIdpInitiated,
    issuer: f.issuer,
    client_id: f.clientId,
    sealed_client_secret: f.sealedClientSecret,
  };
}

/** A selected row as the domain object: the jsonb columns are what toColumns wrote. */
function toRow<
  R extends { type: string; attributeMapping: unknown; signingCertificates: unknown; groupRoles: unknown },
>(r: R) {
  return {
    ...r,
    groupRoles: r.groupRoles as GroupRole[],
    type: r.type as ConnectionType,
    attributeMapping: r.attributeMapping as AttributeMapping,
    signingCertificates: r.signingCertificates as string[],
  };
}

export async function insertConnection(
  trx: Executor,
  c: { id: string; organizationId: string; now: Date } & ConnectionFields,
): Promise<void> {
  await trx
    .insertInto('sso_connections')
    .values({
      id: c.id,
      organization_id: c.organizationId,
      created_at: c.now,
      updated_at: c.now,
      ...toColumns(c),
    })
    .execute();
}

export async function updateConnection(
  trx: Executor,
  c: { id: string; organizationId: string; now: Date } & ConnectionFields,
): Promise<boolean> {
  const rows = await trx
    .updateTable('sso_connections')
    .set({ updated_at: c.now, ...toColumns(c) })
    .where('organization_id', '=', c.organizationId)
    .where('id', '=', c.id)
    .returning('id')
    .execute();
  return rows.length === 1;
}

/** The connection, with `FOR UPDATE` when `lock` (a change re-reads it under its lock). */
export async function connectionById(
  trx: Executor,
  organizationId: string,
  id: string,
  lock = false,
): Promise<ConnectionRow | undefined> {
  let query = trx
    .selectFrom('sso_connections')
    .select(columns)
    .where('organization_id', '=', organizationId)
    .where('id', '=', id);
  if (lock) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row && toRow(row);
}

/** Whether any connection is enabled (the hosted sign-in then asks for the identifier first). */
export async function anyEnabledConnection(trx: Executor): Promise<boolean> {
  const row = await trx
    .selectFrom('sso_connections')
    .select('id')
    .where('enabled', '=', true)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** A connection by its id alone (the SAML and OpenID routes name only the connection). */
export async function connectionOf(trx: Executor, id: string): Promise<ConnectionRow | undefined> {
  const row = await trx.selectFrom('sso_connections').select(columns).where('id', '=', id).executeTakeFirst();
  return row && toRow(row);
}

export async function connectionsPage(
  trx: Executor,
  organizationId: string,
  window: KeysetWindow,
): Promise<ConnectionRow[]> {
  const rows = await trx
    .selectFrom('sso_connections')
    .select(columns)
    .where('organization_id', '=', organizationId)
    .where(afterPosition('created_at', window, 'id'))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
  return rows.map(toRow);
}

export async function deleteConnection(trx: Executor, organizationId: string, id: string): Promise<boolean> {
  const rows = await trx
    .deleteFrom('sso_connections')
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returning('id')
    .execute();
  return rows.length === 1;
}

/** The enabled connections (`c`) of organizations not disabled (`o`); the callers select and narrow. */
function enabledConnections(trx: Executor) {
  return trx
    .selectFrom('sso_connections as c')
    .innerJoin('organizations as o', 'o.id', 'c.organization_id')
    .where('c.enabled', '=', true)
    .where('o.disabled_at', 'is', null);
}

/** The organization of connection `id` while both are enabled; undefined otherwise. One statement. */
export async function enabledConnectionOrganization(trx: Executor, id: string): Promise<string | undefined> {
  const row = await enabledConnections(trx)
    .select('c.organization_id')
    .where('c.id', '=', id)
    .executeTakeFirst();
  return row?.organization_id;
}

/**
 * The oldest enabled connection (SAML or OpenID) of an enabled organization, with the
 * organization's id: where home-realm discovery sends a person (docs/sso.md, "Signing in").
 */
export async function enabledConnectionRoute(
  trx: Executor,
  organization: { id: string } | { slug: string },
): Promise<{ connectionId: string; organizationId: string } | undefined> {
  const row = await enabledConnections(trx)
    .select(['c.id', 'c.organization_id'])
    .where(
      'id' in organization ? 'o.id' : 'o.slug',
      '=',
      'id' in organization ? organization.id : organization.slug,
    )
    .orderBy('c.created_at', 'asc')
    .orderBy('c.id', 'asc')
    .limit(1)
    .executeTakeFirst();
  return row ? { connectionId: row.id, organizationId: row.organization_id } : undefined;
}
