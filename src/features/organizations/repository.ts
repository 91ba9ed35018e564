import { type Expression, type ExpressionBuilder, expressionBuilder } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { DB } from '../../platform/db/schema.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';
import { firstVerifiedIdentifier } from '../identities/repository.js';

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  requireSecondFactor: boolean;
  /** Require SSO for the organization's verified domains (docs/sso.md, "Require SSO"). */
  requireSso: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** An organization as one of its members sees it: the organization and the member's role. */
export interface MemberView extends OrganizationRow {
  role: string;
}

export interface MembershipRow {
  id: string;
  name: string;
  slug: string;
  role: string;
  requireSecondFactor: boolean;
  createdAt: Date;
}

export interface MemberRow {
  /** The member's identity id (also the keyset tie-breaker). */
  id: string;
  role: string;
  createdAt: Date;
  displayType: string | null;
  displayValue: string | null;
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
}

const organizationColumns = [
  'o.id',
  'o.name',
  'o.slug',
  'o.require_second_factor as requireSecondFactor',
  'o.require_sso as requireSso',
  'o.created_at as createdAt',
  'o.updated_at as updatedAt',
] as const;

/** False when the slug is taken: the unique index decides between two creations at once. */
export async function insertOrganization(
  trx: Executor,
  o: { id: string; name: string; slug: string; createdBy: string; now: Date },
): Promise<boolean> {
  return changedOne(
    trx
      .insertInto('organizations')
      .values({
        id: o.id,
        name: o.name,
        slug: o.slug,
        created_by: o.createdBy,
        created_at: o.now,
        updated_at: o.now,
      })
      .onConflict((oc) => oc.column('slug').doNothing())
      .returning('id'),
  );
}

export async function insertMembership(
  trx: Executor,
  m: { organizationId: string; identityId: string; role: string; now: Date },
): Promise<void> {
  await trx
    .insertInto('organization_memberships')
    .values({
      organization_id: m.organizationId,
      identity_id: m.identityId,
      role: m.role,
      created_at: m.now,
      updated_at: m.now,
    })
    .execute();
}

/** A live organization and the identity's role in it; undefined when either is missing. */
export function memberView(
  trx: Executor,
  organizationId: string,
  identityId: string,
): Promise<MemberView | undefined> {
  return trx
    .selectFrom('organizations as o')
    .innerJoin('organization_memberships as m', 'm.organization_id', 'o.id')
    .select([...organizationColumns, 'm.role'])
    .where('o.id', '=', organizationId)
    .where('m.identity_id', '=', identityId)
    .where('o.disabled_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Locks the live organization row (FOR UPDATE): every change to an organization or its
 * memberships takes this lock first, so the owner count it reads afterwards stays true until the
 * commit (two demotions of the last two owners serialise here; the second sees one owner left).
 */
export function lockOrganization(
  trx: Executor,
  organizationId: string,
): Promise<OrganizationRow | undefined> {
  return trx
    .selectFrom('organizations as o')
    .select(organizationColumns)
    .where('o.id', '=', organizationId)
    .where('o.disabled_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}

/** A member's role, read after the organization lock. */
export async function roleOf(
  trx: Executor,
  organizationId: string,
  identityId: string,
): Promise<string | undefined> {
  const row = await trx
    .selectFrom('organization_memberships')
    .select('role')
    .where('organization_id', '=', organizationId)
    .where('identity_id', '=', identityId)
    .executeTakeFirst();
  return row?.role;
}

export async function ownerCount(trx: Executor, organizationId: string): Promise<number> {
  const row = await trx
    .selectFrom('organization_memberships')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function updateOrganization(
  trx: Executor,
  organizationId: string,
  change: { name?: string; requireSecondFactor?: boolean; requireSso?: boolean; updatedAt: Date },
): Promise<OrganizationRow> {
  return trx
    .updateTable('organizations as o')
    .set({
      ...(change.name !== undefined ? { name: change.name } : {}),
      ...(change.requireSecondFactor !== undefined
        ? { require_second_factor: change.requireSecondFactor }
        : {}),
      ...(change.requireSso !== undefined ? { require_sso: change.requireSso } : {}),
      updated_at: change.updatedAt,
    })
    .where('o.id', '=', organizationId)
    .returning(organizationColumns)
    .executeTakeFirstOrThrow();
}

/**
 * Sets or clears disabled_at (an operator's act, operators/service.ts); moves updated_at forward
 * (the ETag's version). True when it changed.
 */
export async function setDisabled(
  trx: Executor,
  organizationId: string,
  disabledAt: Date | null,
  updatedAt: Date,
): Promise<boolean> {
  const r = await trx
    .updateTable('organizations')
    .set({ disabled_at: disabledAt, updated_at: updatedAt })
    .where('id', '=', organizationId)
    .where('disabled_at', disabledAt === null ? 'is not' : 'is', null)
    .returning('id')
    .execute();
  return r.length === 1;
}

export async function setRole(
  trx: Executor,
  organizationId: string,
  identityId: string,
  role: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('organization_memberships')
      .set({ role, updated_at: now })
      .where('organization_id', '=', organizationId)
      .where('identity_id', '=', identityId)
      .returning('identity_id'),
  );
}

/** The roles of these identities in the organization (those that are members). */
export async function rolesOf(
  trx: Executor,
  organizationId: string,
  identityIds: string[],
): Promise<Map<string, string>> {
  if (identityIds.length === 0) return new Map();
  const rows = await trx
    .selectFrom('organization_memberships')
    .select(['identity_id', 'role'])
    .where('organization_id', '=', organizationId)
    .where('identity_id', 'in', identityIds)
    .execute();
  return new Map(rows.map((r) => [r.identity_id, r.role]));
}

/** One role for many members in one statement (a SCIM group mapped to a role: docs/scim.md). */
export async function setRoles(
  trx: Executor,
  organizationId: string,
  identityIds: string[],
  role: string,
  now: Date,
): Promise<void> {
  if (identityIds.length === 0) return;
  await trx
    .updateTable('organization_memberships')
    .set({ role, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('identity_id', 'in', identityIds)
    .execute();
}

/**
 * Removes a membership. Sessions whose active organization it was lose it in the same statement
 * (the sessions_active_membership key, ON DELETE SET NULL), so the next request and the next token
 * on every instance have no active organization.
 */
export async function deleteMembership(
  trx: Executor,
  organizationId: string,
  identityId: string,
): Promise<boolean> {
  return changedOne(
    trx
      .deleteFrom('organization_memberships')
      .where('organization_id', '=', organizationId)
      .where('identity_id', '=', identityId)
      .returning('identity_id'),
  );
}

/** One page of the identity's memberships in live organizations, newest membership first. */
export function membershipsPage(
  trx: Executor,
  identityId: string,
  window: KeysetWindow,
): Promise<MembershipRow[]> {
  return trx
    .selectFrom('organization_memberships as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select([
      'o.id',
      'o.name',
      'o.slug',
      'm.role',
      'o.require_second_factor as requireSecondFactor',
      'm.created_at as createdAt',
    ])
    .where('m.identity_id', '=', identityId)
    .where('o.disabled_at', 'is', null)
    .where(afterPosition('m.created_at', window, 'o.id'))
    .orderBy('m.created_at', 'desc')
    .orderBy('o.id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/**
 * One page of an organization's members, newest first, each with the first verified identifier of
 * its identity (the one the service names a person by; the service masks it for those who may
 * not manage members) and its name columns.
 */
export function membersPage(
  trx: Executor,
  organizationId: string,
  window: KeysetWindow,
): Promise<MemberRow[]> {
  return trx
    .selectFrom('organization_memberships as m')
    .innerJoin('identities as p', 'p.id', 'm.identity_id')
    .select((eb) => {
      const first = () => firstVerifiedIdentifier(eb, eb.ref('m.identity_id'));
      return [
        'm.identity_id as id',
        'm.role',
        'm.created_at as createdAt',
        first().select('f.type').as('displayType'),
        first().select('f.value').as('displayValue'),
        'p.given_name as givenName',
        'p.family_name as familyName',
        'p.display_name as displayName',
      ];
    })
    .where('m.organization_id', '=', organizationId)
    .where(afterPosition('m.created_at', window, 'm.identity_id'))
    .orderBy('m.created_at', 'desc')
    .orderBy('m.identity_id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

const eb = expressionBuilder<DB, never>();

/**
 * The identity (an id, or a column naming it in the outer statement) holds a verified, unrevoked
 * authenticator or a live passkey: the one test of "has a second factor" the switch and the
 * clearing statements share.
 */
function holdsSecondFactor(identity: string | Expression<string>) {
  return eb.or([
    eb.exists(
      eb
        .selectFrom('second_factors as f')
        .select('f.id')
        .where('f.identity_id', '=', identity)
        .where('f.verified_at', 'is not', null)
        .where('f.revoked_at', 'is', null),
    ),
    eb.exists(
      eb
        .selectFrom('passkeys as p')
        .select('p.id')
        .where('p.identity_id', '=', identity)
        .where('p.removed_at', 'is', null),
    ),
  ]);
}

/** The session's identity holds no second factor. */
const holdsNoSecondFactor = ({ not, ref }: ExpressionBuilder<DB & { s: DB['sessions'] }, 's'>) =>
  not(holdsSecondFactor(ref('s.identity_id')));

/**
 * What switching to an organization checks. The identity, organization and membership rows are held
 * FOR KEY SHARE until the switch commits, in that order (the house's: identity, then organization,
 * then its children). Each write that would make the switch wrong takes one of them FOR UPDATE:
 * removing the identity's last second factor (identity row), turning the policy on or removing the
 * member (organization row). Such a write either runs first, and this check sees it, or waits for
 * the switch and then clears what it wrote.
 */
export async function switchTarget(trx: Executor, organizationId: string, identityId: string) {
  await trx.selectFrom('identities').select('id').where('id', '=', identityId).forKeyShare().execute();
  await trx.selectFrom('organizations').select('id').where('id', '=', organizationId).forKeyShare().execute();
  return trx
    .selectFrom('organization_memberships as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select([
      'm.role',
      'o.require_second_factor as requireSecondFactor',
      holdsSecondFactor(identityId).as('hasSecondFactor'),
    ])
    .where('m.organization_id', '=', organizationId)
    .where('m.identity_id', '=', identityId)
    .where('o.disabled_at', 'is', null)
    .forKeyShare('m')
    .executeTakeFirst();
}

/**
 * The policy just turned on: every session acting in the organization whose identity holds no
 * second factor stops acting in it. Answers how many sessions it cleared.
 */
export async function clearActiveWithoutSecondFactor(trx: Executor, organizationId: string): Promise<number> {
  const cleared = await trx
    .updateTable('sessions as s')
    .set({ active_organization_id: null })
    .where('s.active_organization_id', '=', organizationId)
    .where(holdsNoSecondFactor)
    .executeTakeFirst();
  return Number(cleared.numUpdatedRows);
}

/**
 * The identity just removed a second factor (under its identity row lock): if it was its last one,
 * every session of it acting in an organization that requires one stops acting there. Answers how
 * many sessions it cleared.
 */
export async function clearActiveRequiringSecondFactor(trx: Executor, identityId: string): Promise<number> {
  const cleared = await trx
    .updateTable('sessions as s')
    .set({ active_organization_id: null })
    .where('s.identity_id', '=', identityId)
    .where('s.active_organization_id', 'in', ({ selectFrom }) =>
      selectFrom('organizations as o').select('o.id').where('o.require_second_factor', '=', true),
    )
    .where(holdsNoSecondFactor)
    .executeTakeFirst();
  return Number(cleared.numUpdatedRows);
}

/**
 * Erasure: the organizations the identity owns, each with its owner and member counts. Every
 * organization the identity belongs to is locked first (FOR UPDATE, in id order so two erasures
 * never deadlock), owned or not: an ownership transfer to the identity locks its organization too,
 * so it either commits before (and the counts below, a new statement, see it) or waits and then
 * finds the membership gone. Nobody joins, leaves or is promoted while the erasure decides.
 */
export async function ownedOrganizations(trx: Executor, identityId: string) {
  const memberOf = await trx
    .selectFrom('organizations as o')
    .innerJoin('organization_memberships as m', 'm.organization_id', 'o.id')
    .select('o.id')
    .where('m.identity_id', '=', identityId)
    .orderBy('o.id')
    .forUpdate('o')
    .execute();
  if (memberOf.length === 0) return [];
  return trx
    .selectFrom('organization_memberships as m')
    .select((eb) => [
      'm.organization_id as id',
      eb.fn.countAll<string>().as('members'),
      eb.fn.count<string>('m.identity_id').filterWhere('m.role', '=', 'owner').as('owners'),
      eb.fn
        .count<string>('m.identity_id')
        .filterWhere((eb) => eb.and([eb('m.identity_id', '=', identityId), eb('m.role', '=', 'owner')]))
        .as('mine'),
    ])
    .where(
      'm.organization_id',
      'in',
      memberOf.map((o) => o.id),
    )
    .groupBy('m.organization_id')
    .execute()
    .then((rows) =>
      rows
        .filter((r) => Number(r.mine) > 0)
        .map((r) => ({ id: r.id, members: Number(r.members), owners: Number(r.owners) })),
    );
}

/**
 * An operator's deletion: its memberships cascade, and every session whose active organization it
 * was loses it in the same statement (sessions_active_membership, ON DELETE SET NULL).
 */
export async function deleteOrganization(trx: Executor, organizationId: string): Promise<void> {
  await trx.deleteFrom('organizations').where('id', '=', organizationId).execute();
}

/** Erasure: organizations deleted with their last member (memberships cascade). */
export async function deleteOrganizations(trx: Executor, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await trx.deleteFrom('organizations').where('id', 'in', ids).execute();
}

/** Erasure: every membership of the identity. */
export async function deleteIdentityMemberships(trx: Executor, identityId: string): Promise<number> {
  const r = await trx
    .deleteFrom('organization_memberships')
    .where('identity_id', '=', identityId)
    .returning('organization_id')
    .execute();
  return r.length;
}

/**
 * Makes the identity a member with `role` unless it already is one (its role then unchanged):
 * true when this call made the membership. Two at once: the primary key lets one insert.
 */
export async function joinIfAbsent(
  trx: Executor,
  m: { organizationId: string; identityId: string; role: string; now: Date },
): Promise<boolean> {
  const rows = await trx
    .insertInto('organization_memberships')
    .values({
      organization_id: m.organizationId,
      identity_id: m.identityId,
      role: m.role,
      created_at: m.now,
      updated_at: m.now,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'identity_id']).doNothing())
    .returning('identity_id')
    .execute();
  return rows.length === 1;
}

/** Which of these organization ids exist (an import's memberships). */
export async function existingOrganizations(trx: Executor, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await trx
    .selectFrom('organizations')
    .select('id')
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** Memberships brought by an import, in one statement. */
export async function insertImportedMemberships(
  trx: Executor,
  rows: { organizationId: string; identityId: string; role: string; now: Date }[],
): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('organization_memberships')
    .values(
      rows.map((m) => ({
        organization_id: m.organizationId,
        identity_id: m.identityId,
        role: m.role,
        created_at: m.now,
        updated_at: m.now,
      })),
    )
    .execute();
}

/** The memberships of these identities (an export). */
export async function membershipsForExport(trx: Executor, identityIds: string[]) {
  if (identityIds.length === 0) return [];
  return trx
    .selectFrom('organization_memberships')
    .select(['identity_id as identityId', 'organization_id as organizationId', 'role'])
    .where('identity_id', 'in', identityIds)
    .orderBy('created_at')
    .execute();
}
