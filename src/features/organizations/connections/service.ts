import { randomUUID } from 'node:crypto';
import type { Config } from '../../../config.js';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Sealer } from '../../../platform/crypto/seal.js';
import { selfSignedCertificate } from '../../../platform/crypto/self-signed.js';
import type { Database, Executor } from '../../../platform/db/database.js';
import type { CursorCodec, CursorScope } from '../../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../../platform/pagination/page.js';
import { Problem } from '../../../platform/problem.js';
import type { EventLog } from '../../events/log.js';
import { lockAnyOrganization, organizationDetail } from '../operators/repository.js';
import * as orgs from '../repository.js';
import { OrganizationRoles, OWNER_ROLE } from '../roles.js';
import {
  fetchMetadata,
  type MetadataFetchLimits,
  MetadataUnavailable,
  normaliseCertificate,
  parseIdpMetadata,
} from './metadata.js';
import * as repo from './repository.js';
import { type ConnectionView, connectionView } from './view.js';

/** What connections use. */
export interface ConnectionServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  cursors: CursorCodec;
  sealer: Sealer;
  config: Pick<Config, 'organizations' | 'publicOrigin'>;
  events: EventLog;
}

export const CONNECTIONS_MANAGE = 'connections:manage';
/** The largest metadata document read, by value or by URL. */
export const METADATA_MAX_BYTES = 1024 * 1024;
/** Our decryption certificate's life: ten years (an IdP pins it; a new key is a new connection setting). */
const DECRYPTION_CERT_DAYS = 3650;

export interface SamlInput {
  metadataXml?: string;
  metadataUrl?: string;
  idpEntityId?: string;
  ssoUrl?: string;
  signingCertificates?: string[];
  wantEncrypted?: boolean;
  allowIdpInitiated?: boolean;
}

export interface OidcInput {
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
}

export interface ConnectionInput {
  name?: string;
  enabled?: boolean;
  defaultRole?: string;
  attributeMapping?: repo.AttributeMapping;
  groupAttribute?: string | null;
  groupRoles?: repo.GroupRole[];
  saml?: SamlInput;
  oidc?: OidcInput;
}

export type MetadataFetcher = (url: string, limits: MetadataFetchLimits) => Promise<string | null>;

/** Who acts: a member (their role is checked) or an operator (`admin:<key>`). */
type Actor = { kind: 'member'; identityId: string } | { kind: 'operator'; operator: string };

const invalid = () => new Problem('organization.connection_invalid');
const unknownConnection = () => new Problem('organization.connection_not_found');

const httpUrl = (value: string, https = false) => {
  try {
    const u = new URL(value);
    return u.protocol === 'https:' || (!https && u.protocol === 'http:');
  } catch {
    return false;
  }
};

/**
 * Enterprise connections of an organization (docs/sso.md, "Connections"). A member with
 * `connections:manage` (owner, admin) or an operator adds, changes and removes them. IdP metadata
 * is read (by value, or fetched by URL with a time and size limit) before any transaction, so a
 * slow IdP never holds the organization's row; the change itself runs under that row's lock, with
 * its audit record and event. Secrets are sealed, bound to the connection's id, and never shown.
 */
export class ConnectionService {
  readonly #roles: OrganizationRoles;
  readonly #fetch: MetadataFetcher;

  constructor(
    private readonly deps: ConnectionServiceDeps,
    fetcher?: MetadataFetcher,
  ) {
    this.#roles = new OrganizationRoles(deps.config);
    this.#fetch = fetcher ?? fetchMetadata;
  }

  async create(actor: Actor, organizationId: string, type: repo.ConnectionType, input: ConnectionInput) {
    const id = randomUUID();
    const now = this.deps.clock.now();
    const fields = await this.#fields(id, type, input, undefined, now);
    return this.#write(actor, organizationId, async (trx, role) => {
      this.#mayGrant(actor, role, fields.defaultRole);
      for (const g of fields.groupRoles) this.#mayGrant(actor, role, g.role);
      await repo.insertConnection(trx, { id, organizationId, now, ...fields });
      return this.#changed(trx, 'organization.connection.created', actor, organizationId, id, {
        type,
        name: fields.name,
      });
    });
  }

  async update(actor: Actor, organizationId: string, connectionId: string, input: ConnectionInput) {
    const { db } = this.deps.database;
    if (actor.kind === 'member')
      this.#permitted((await orgs.memberView(db, organizationId, actor.identityId))?.role);
    const current = await repo.connectionById(db, organizationId, connectionId);
    if (!current) throw unknownConnection();
    const now = this.deps.clock.now();
    const fields = await this.#fields(connectionId, current.type, input, current, now);
    return this.#write(actor, organizationId, async (trx, role) => {
      const locked = await repo.connectionById(trx, organizationId, connectionId, true);
      if (!locked) throw unknownConnection();
      if (input.defaultRole !== undefined) this.#mayGrant(actor, role, fields.defaultRole);
      if (input.groupRoles !== undefined)
        for (const g of fields.groupRoles) this.#mayGrant(actor, role, g.role);
      await repo.updateConnection(trx, { id: connectionId, organizationId, now, ...fields });
      return this.#changed(trx, 'organization.connection.updated', actor, organizationId, connectionId, {
        fields: Object.keys(input).sort().join(','),
      });
    });
  }

  async remove(actor: Actor, organizationId: string, connectionId: string): Promise<void> {
    await this.#write(actor, organizationId, async (trx) => {
      const row = await repo.connectionById(trx, organizationId, connectionId, true);
      if (!row || !(await repo.deleteConnection(trx, organizationId, connectionId)))
        throw unknownConnection();
      const data = connectionView(row, this.deps.config.publicOrigin);
      await this.deps.events.append(trx, {
        type: 'organization.connection.deleted',
        actor: this.#actorName(actor),
        organizationId,
        data,
      });
      await this.#audit(trx, 'organization.connection.deleted', actor, connectionId, {
        organizationId,
        type: row.type,
        name: row.name,
      });
    });
  }

  async list(scope: CursorScope, query: PageQuery, actor: Actor, organizationId: string) {
    const { db } = this.deps.database;
    if (actor.kind === 'member')
      this.#permitted((await orgs.memberView(db, organizationId, actor.identityId))?.role);
    else if (!(await organizationDetail(db, organizationId)))
      throw new Problem('admin.organization_not_found');
    const fetch = (window: KeysetWindow) => repo.connectionsPage(db, organizationId, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return { items: items.map((c) => connectionView(c, this.deps.config.publicOrigin)), pageInfo };
  }

  async get(actor: Actor, organizationId: string, connectionId: string): Promise<ConnectionView> {
    const { db } = this.deps.database;
    if (actor.kind === 'member')
      this.#permitted((await orgs.memberView(db, organizationId, actor.identityId))?.role);
    else if (!(await organizationDetail(db, organizationId)))
      throw new Problem('admin.organization_not_found');
    const row = await repo.connectionById(db, organizationId, connectionId);
    if (!row) throw unknownConnection();
    return connectionView(row, this.deps.config.publicOrigin);
  }

  /**
   * The stored fields after `input`: metadata (by value or URL) replaces the entity id, SSO URL
   * and certificates; certificates given replace the set (a rotation sends the old and the new).
   */
  async #fields(
    id: string,
    type: repo.ConnectionType,
    input: ConnectionInput,
    current: repo.ConnectionRow | undefined,
    now: Date,
  ): Promise<repo.ConnectionFields> {
    if ((type === 'saml' && input.oidc) || (type === 'oidc' && input.saml)) throw invalid();
    const fields: repo.ConnectionFields = current
      ? { ...current }
      : {
          type,
          name: '',
          enabled: false,
          defaultRole: 'member',
          attributeMapping: {},
          groupAttribute: null,
          groupRoles: [],
          idpEntityId: null,
          ssoUrl: null,
          signingCertificates: [],
          wantEncrypted: false,
          decryptionCertificate: null,
          sealedDecryptionKey: null,
          allowIdpInitiated: false,
          issuer: null,
          clientId: null,
          sealedClientSecret: null,
        };
    if (input.name !== undefined) fields.name = input.name.trim();
    if (input.enabled !== undefined) fields.enabled = input.enabled;
    if (input.defaultRole !== undefined) fields.defaultRole = input.defaultRole;
    if (input.attributeMapping !== undefined) fields.attributeMapping = { ...input.attributeMapping };
    if (input.groupAttribute !== undefined) fields.groupAttribute = input.groupAttribute;
    if (input.groupRoles !== undefined)
      fields.groupRoles = input.groupRoles.map((g) => ({ group: g.group, role: g.role }));
    if (fields.name.length === 0) throw invalid();
    // Every role a connection hands out is a configured one, never owner (docs/sso.md, "Groups and roles").
    for (const r of [fields.defaultRole, ...fields.groupRoles.map((g) => g.role)])
      if (!this.#roles.known(r) || r === OWNER_ROLE) throw invalid();
    if (type === 'saml') await this.#saml(id, fields, input.saml ?? {}, now);
    else this.#oidc(id, fields, input.oidc ?? {});
    return fields;
  }

  async #saml(id: string, fields: repo.ConnectionFields, s: SamlInput, now: Date): Promise<void> {
    if (s.metadataXml !== undefined && s.metadataUrl !== undefined) throw invalid();
    let xml = s.metadataXml;
    if (s.metadataUrl !== undefined) {
      try {
        xml =
          (await this.#fetch(s.metadataUrl, {
            timeoutMs: this.deps.config.organizations.ssoMetadataTimeoutMs,
            maxBytes: METADATA_MAX_BYTES,
          })) ?? undefined;
      } catch (err) {
        if (err instanceof MetadataUnavailable)
          throw new Problem('organization.connection_metadata_unavailable');
        throw err;
      }
      if (xml === undefined) throw invalid();
    }
    if (xml !== undefined) {
      const metadata = parseIdpMetadata(xml);
      if (!metadata) throw invalid();
      fields.idpEntityId = metadata.entityId;
      fields.ssoUrl = metadata.ssoUrl;
      fields.signingCertificates = metadata.certificates.slice(0, 4);
    }
    if (s.idpEntityId !== undefined) fields.idpEntityId = s.idpEntityId;
    if (s.ssoUrl !== undefined) fields.ssoUrl = s.ssoUrl;
    if (s.signingCertificates !== undefined) {
      const certs = s.signingCertificates.map(normaliseCertificate);
      if (certs.some((c) => c === null)) throw invalid();
      fields.signingCertificates = [...new Set(certs as string[])];
    }
    if (s.allowIdpInitiated !== undefined) fields.allowIdpInitiated = s.allowIdpInitiated;
    if (s.wantEncrypted !== undefined) fields.wantEncrypted = s.wantEncrypted;
    // Our decryption key is made once, when encryption is first asked for, and kept (an IdP that
    // was given our certificate keeps encrypting to it even while encryption is switched off).
    if (fields.wantEncrypted && fields.sealedDecryptionKey === null) {
      const made = await selfSignedCertificate(`SAML SP ${id}`, now, DECRYPTION_CERT_DAYS);
      fields.decryptionCertificate = normaliseCertificate(made.certificate);
      fields.sealedDecryptionKey = this.deps.sealer.seal(made.privateKey, `sso-connection:${id}`);
    }
    if (
      !fields.idpEntityId ||
      fields.idpEntityId.length > 1024 ||
      !fields.ssoUrl ||
      !httpUrl(fields.ssoUrl) ||
      fields.signingCertificates.length < 1 ||
      fields.signingCertificates.length > 4
    )
      throw invalid();
  }

  #oidc(id: string, fields: repo.ConnectionFields, o: OidcInput): void {
    if (o.issuer !== undefined) fields.issuer = o.issuer;
    if (o.clientId !== undefined) fields.clientId = o.clientId;
    if (o.clientSecret !== undefined)
      fields.sealedClientSecret = this.deps.sealer.seal(o.clientSecret, `sso-connection:${id}`);
    if (!fields.issuer || !httpUrl(fields.issuer, true) || !fields.clientId || !fields.sealedClientSecret)
      throw invalid();
  }

  /** Runs `act` under the organization's row lock, the member's role re-read after the lock. */
  async #write<T>(
    actor: Actor,
    organizationId: string,
    act: (trx: Executor, role: string | undefined) => Promise<T>,
  ): Promise<T> {
    return this.deps.database.db.transaction().execute(async (trx) => {
      if (actor.kind === 'operator') {
        if (!(await lockAnyOrganization(trx, organizationId)))
          throw new Problem('admin.organization_not_found');
        return act(trx, undefined);
      }
      if (!(await orgs.lockOrganization(trx, organizationId))) throw new Problem('organization.not_found');
      const role = await orgs.roleOf(trx, organizationId, actor.identityId);
      this.#permitted(role);
      return act(trx, role);
    });
  }

  async #changed(
    trx: Executor,
    type: 'organization.connection.created' | 'organization.connection.updated',
    actor: Actor,
    organizationId: string,
    connectionId: string,
    details: Record<string, string>,
  ): Promise<ConnectionView> {
    const row = await repo.connectionById(trx, organizationId, connectionId);
    if (!row) throw unknownConnection();
    const view = connectionView(row, this.deps.config.publicOrigin);
    await this.deps.events.append(trx, { type, actor: this.#actorName(actor), organizationId, data: view });
    await this.#audit(trx, type, actor, connectionId, { organizationId, ...details });
    return view;
  }

  /** A member never makes a connection hand out a role they could not grant themselves. */
  #mayGrant(actor: Actor, role: string | undefined, defaultRole: string): void {
    if (actor.kind === 'member' && !this.#roles.mayAssign(role ?? '', defaultRole)) throw invalid();
  }

  /** Not a member: 404 (nothing is told); a role without `connections:manage`: 403. */
  #permitted(role: string | undefined): void {
    if (role === undefined) throw new Problem('organization.not_found');
    if (!this.#roles.can(role, CONNECTIONS_MANAGE)) throw new Problem('organization.permission_denied');
  }

  #actorName(actor: Actor): string {
    return actor.kind === 'member' ? actor.identityId : actor.operator;
  }

  #audit(trx: Executor, name: string, actor: Actor, target: string, details: Record<string, string>) {
    return this.deps.audit.append(trx, {
      name,
      actor: this.#actorName(actor),
      target,
      outcome: 'success',
      details,
    });
  }
}
