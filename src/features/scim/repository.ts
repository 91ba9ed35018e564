import type { Expression, SqlBool } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';

// The SCIM tables of migration 0033 (docs/scim.md): tokens, users, groups and their members.

export interface TokenRow {
  id: string;
  organizationId: string;
  name: string;
  createdBy: string;
  createdAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

const tokenColumns = [
  'id',
  'organization_id as organizationId',
  'name',
  'created_by as createdBy',
  'created_at as createdAt',
  'revoked_at as revokedAt',
  'last_used_at as lastUsedAt',
] as const;

export async function insertToken(
  trx: Executor,
  t: { id: string; organizationId: string; name: string; hash: string; createdBy: string; now: Date },
): Promise<void> {
  await trx
    .insertInto('scim_tokens')
    .values({
      id: t.id,
      organization_id: t.organizationId,
      name: t.name,
      token_hash: t.hash,
      created_by: t.createdBy,
      created_at: t.now,
    })
    .execute();
}

export function tokenById(trx: Executor, organizationId: string, id: string): Promise<TokenRow | undefined> {
  return trx
    .selectFrom('scim_tokens')
    .select(tokenColumns)
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** An organization's tokens, revoked ones included, newest first. */
export function tokensPage(trx: Executor, organizationId: string, window: KeysetWindow): Promise<TokenRow[]> {
  return trx
    .selectFrom('scim_tokens')
    .select(tokenColumns)
    .where('organization_id', '=', organizationId)
    .where(afterPosition('created_at', window, 'id'))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/** Revokes a live token; false when it is unknown here or revoked already. */
export function revokeToken(trx: Executor, organizationId: string, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('scim_tokens')
      .set({ revoked_at: now })
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .returning('id'),
  );
}

/** The live token with this hash, of a live organization. */
export function liveToken(trx: Executor, hash: string) {
  return trx
    .selectFrom('scim_tokens as t')
    .innerJoin('organizations as o', 'o.id', 't.organization_id')
    .select(['t.id', 't.organization_id as organizationId', 't.name', 't.last_used_at as lastUsedAt'])
    .where('t.token_hash', '=', hash)
    .where('t.revoked_at', 'is', null)
    .where('o.disabled_at', 'is', null)
    .executeTakeFirst();
}

/** Records a use, at most once a minute per token (a directory's sync is thousands of requests). */
export async function touchToken(trx: Executor, id: string, now: Date): Promise<void> {
  await trx
    .updateTable('scim_tokens')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) =>
      eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', new Date(now.getTime() - 60_000))]),
    )
    .execute();
}

// ---- Users ----

export interface ScimUserRow {
  organizationId: string;
  identityId: string;
  userName: string;
  externalId: string | null;
  active: boolean;
  managed: boolean;
  role: string;
  attributes: Record<string, unknown>;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

const userColumns = [
  'u.organization_id as organizationId',
  'u.identity_id as identityId',
  'u.user_name as userName',
  'u.external_id as externalId',
  'u.active',
  'u.managed',
  'u.role',
  'u.attributes',
  'u.version',
  'u.created_at as createdAt',
  'u.updated_at as updatedAt',
] as const;

type UserRowOut = Omit<ScimUserRow, 'attributes'> & { attributes: unknown };
const asUser = (r: UserRowOut): ScimUserRow => ({
  ...r,
  attributes: (r.attributes ?? {}) as Record<string, unknown>,
});

export async function userById(
  trx: Executor,
  organizationId: string,
  identityId: string,
  forUpdate = false,
): Promise<ScimUserRow | undefined> {
  const q = trx
    .selectFrom('scim_users as u')
    .select(userColumns)
    .where('u.organization_id', '=', organizationId)
    .where('u.identity_id', '=', identityId);
  const row = await (forUpdate ? q.forUpdate() : q).executeTakeFirst();
  return row ? asUser(row) : undefined;
}

/**
 * A new SCIM user; false when the organization already has one with this userName or externalId,
 * or for this identity (the unique indexes decide between two creations at once).
 */
export function insertUser(
  trx: Executor,
  u: Omit<ScimUserRow, 'version' | 'createdAt' | 'updatedAt'> & { now: Date },
): Promise<boolean> {
  return changedOne(
    trx
      .insertInto('scim_users')
      .values({
        organization_id: u.organizationId,
        identity_id: u.identityId,
        user_name: u.userName,
        external_id: u.externalId,
        active: u.active,
        managed: u.managed,
        role: u.role,
        attributes: JSON.stringify(u.attributes),
        created_at: u.now,
        updated_at: u.now,
      })
      .onConflict((oc) => oc.doNothing())
      .returning('identity_id'),
  );
}

/**
 * Replaces the user's attributes when its version is still `expected` (the compare-and-set of
 * If-Match); the version moves by one. Undefined when the version moved meanwhile. Throws the
 * database's unique violation (23505) when the new userName or externalId is another user's.
 */
export async function updateUser(
  trx: Executor,
  organizationId: string,
  identityId: string,
  expected: number,
  change: {
    userName: string;
    externalId: string | null;
    active: boolean;
    attributes: Record<string, unknown>;
    now: Date;
  },
): Promise<ScimUserRow | undefined> {
  const row = await trx
    .updateTable('scim_users as u')
    .set((eb) => ({
      user_name: change.userName,
      external_id: change.externalId,
      active: change.active,
      attributes: JSON.stringify(change.attributes),
      updated_at: change.now,
      version: eb('u.version', '+', eb.lit(1)),
    }))
    .where('u.organization_id', '=', organizationId)
    .where('u.identity_id', '=', identityId)
    .where('u.version', '=', expected)
    .returning(userColumns)
    .executeTakeFirst();
  return row ? asUser(row) : undefined;
}

/** Sets the role a reactivation restores (group mappings). */
export async function setUserRole(
  trx: Executor,
  organizationId: string,
  identityIds: string[],
  role: string,
): Promise<void> {
  if (identityIds.length === 0) return;
  await trx
    .updateTable('scim_users')
    .set({ role })
    .where('organization_id', '=', organizationId)
    .where('identity_id', 'in', identityIds)
    .execute();
}

export async function deleteUser(
  trx: Executor,
  organizationId: string,
  identityId: string,
): Promise<boolean> {
  return changedOne(
    trx
      .deleteFrom('scim_users')
      .where('organization_id', '=', organizationId)
      .where('identity_id', '=', identityId)
      .returning('identity_id'),
  );
}

/**
 * Erasure (admin/service.ts, through the wiring's `erasing`): every SCIM user the identity was
 * provisioned as, in every organization; their group memberships cascade. A directory's next read
 * of them answers 404, and nothing the directory sent about the person is kept.
 */
export async function forgetScimUsers(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('scim_users').where('identity_id', '=', identityId).execute();
}

/** The user with this userName (case-insensitively) in the organization. */
export async function userByName(trx: Executor, organizationId: string, userName: string) {
  const row = await trx
    .selectFrom('scim_users as u')
    .select(userColumns)
    .where('u.organization_id', '=', organizationId)
    .where((eb) => eb(eb.fn('lower', ['u.user_name']), '=', eb.fn('lower', [eb.val(userName)])))
    .executeTakeFirst();
  return row ? asUser(row) : undefined;
}

/**
 * One window of the organization's users matching `where` (a filter built by filter-repository.ts over the
 * alias `u`), oldest first, and how many match in all (SCIM's totalResults).
 */
export async function usersWindow(
  trx: Executor,
  organizationId: string,
  where: Expression<SqlBool>,
  offset: number,
  count: number,
): Promise<{ rows: ScimUserRow[]; total: number }> {
  const base = trx.selectFrom('scim_users as u').where('u.organization_id', '=', organizationId).where(where);
  const [rows, total] = await Promise.all([
    count === 0
      ? Promise.resolve([])
      : base
          .select(userColumns)
          .orderBy('u.created_at')
          .orderBy('u.identity_id')
          .offset(offset)
          .limit(count)
          .execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows.map(asUser), total: Number(total.n) };
}

// ---- Groups ----

export interface GroupRow {
  id: string;
  organizationId: string;
  displayName: string;
  externalId: string | null;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

const groupColumns = [
  'g.id',
  'g.organization_id as organizationId',
  'g.display_name as displayName',
  'g.external_id as externalId',
  'g.version',
  'g.created_at as createdAt',
  'g.updated_at as updatedAt',
] as const;

export function insertGroup(
  trx: Executor,
  g: { id: string; organizationId: string; displayName: string; externalId: string | null; now: Date },
): Promise<boolean> {
  return changedOne(
    trx
      .insertInto('scim_groups')
      .values({
        id: g.id,
        organization_id: g.organizationId,
        display_name: g.displayName,
        external_id: g.externalId,
        created_at: g.now,
        updated_at: g.now,
      })
      .onConflict((oc) => oc.doNothing())
      .returning('id'),
  );
}

export function groupById(
  trx: Executor,
  organizationId: string,
  id: string,
  forUpdate = false,
): Promise<GroupRow | undefined> {
  const q = trx
    .selectFrom('scim_groups as g')
    .select(groupColumns)
    .where('g.organization_id', '=', organizationId)
    .where('g.id', '=', id);
  return (forUpdate ? q.forUpdate() : q).executeTakeFirst();
}

/** Compare-and-set of a group's names (If-Match); undefined when its version moved. */
export function updateGroup(
  trx: Executor,
  organizationId: string,
  id: string,
  expected: number,
  change: { displayName: string; externalId: string | null; now: Date },
): Promise<GroupRow | undefined> {
  return trx
    .updateTable('scim_groups as g')
    .set((eb) => ({
      display_name: change.displayName,
      external_id: change.externalId,
      updated_at: change.now,
      version: eb('g.version', '+', eb.lit(1)),
    }))
    .where('g.organization_id', '=', organizationId)
    .where('g.id', '=', id)
    .where('g.version', '=', expected)
    .returning(groupColumns)
    .executeTakeFirst();
}

export function deleteGroup(trx: Executor, organizationId: string, id: string): Promise<boolean> {
  return changedOne(
    trx
      .deleteFrom('scim_groups')
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .returning('id'),
  );
}

export async function groupsWindow(
  trx: Executor,
  organizationId: string,
  where: Expression<SqlBool>,
  offset: number,
  count: number,
): Promise<{ rows: GroupRow[]; total: number }> {
  const base = trx
    .selectFrom('scim_groups as g')
    .where('g.organization_id', '=', organizationId)
    .where(where);
  const [rows, total] = await Promise.all([
    count === 0
      ? Promise.resolve([])
      : base
          .select(groupColumns)
          .orderBy('g.created_at')
          .orderBy('g.id')
          .offset(offset)
          .limit(count)
          .execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** The members of the groups, each with its userName (the SCIM `display` of a member). */
export async function groupMembers(trx: Executor, organizationId: string, groupIds: string[]) {
  if (groupIds.length === 0) return [];
  return trx
    .selectFrom('scim_group_members as m')
    .innerJoin('scim_users as u', (j) =>
      j.onRef('u.organization_id', '=', 'm.organization_id').onRef('u.identity_id', '=', 'm.identity_id'),
    )
    .select(['m.group_id as groupId', 'm.identity_id as identityId', 'u.user_name as userName'])
    .where('m.organization_id', '=', organizationId)
    .where('m.group_id', 'in', groupIds)
    .orderBy('u.created_at')
    .orderBy('m.identity_id')
    .execute();
}

/** The groups of users (each one's SCIM `groups`), by display name. */
export async function groupsOfUsers(trx: Executor, organizationId: string, identityIds: string[]) {
  if (identityIds.length === 0) return [];
  return trx
    .selectFrom('scim_group_members as m')
    .innerJoin('scim_groups as g', 'g.id', 'm.group_id')
    .select([
      'm.identity_id as identityId',
      'g.id',
      'g.display_name as displayName',
      'g.external_id as externalId',
    ])
    .where('m.organization_id', '=', organizationId)
    .where('m.identity_id', 'in', identityIds)
    .orderBy('g.display_name')
    .execute();
}

/** Which of these ids are users of the organization (a group's members must be). */
export async function existingUsers(trx: Executor, organizationId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await trx
    .selectFrom('scim_users')
    .select('identity_id')
    .where('organization_id', '=', organizationId)
    .where('identity_id', 'in', ids)
    .execute();
  return rows.map((r) => r.identity_id);
}

/** Adds members in one statement (1,000 at once is one INSERT); those already in stay. */
export async function addGroupMembers(
  trx: Executor,
  organizationId: string,
  groupId: string,
  ids: string[],
): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .insertInto('scim_group_members')
    .values(ids.map((identity_id) => ({ group_id: groupId, organization_id: organizationId, identity_id })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function removeGroupMembers(
  trx: Executor,
  groupId: string,
  ids: string[] | 'all',
): Promise<void> {
  let q = trx.deleteFrom('scim_group_members').where('group_id', '=', groupId);
  if (ids !== 'all') {
    if (ids.length === 0) return;
    q = q.where('identity_id', 'in', ids);
  }
  await q.execute();
}

/** The organization's group → role mappings (group displayName or externalId → role). */
export function groupRoles(trx: Executor, organizationId: string) {
  return trx
    .selectFrom('scim_group_roles')
    .select(['group_key as groupKey', 'role'])
    .where('organization_id', '=', organizationId)
    .orderBy('group_key')
    .execute();
}

export async function setGroupRole(
  trx: Executor,
  organizationId: string,
  groupKey: string,
  role: string | null,
): Promise<void> {
  if (role === null) {
    await trx
      .deleteFrom('scim_group_roles')
      .where('organization_id', '=', organizationId)
      .where('group_key', '=', groupKey)
      .execute();
    return;
  }
  await trx
    .insertInto('scim_group_roles')
    .values({ organization_id: organizationId, group_key: groupKey, role })
    .onConflict((oc) => oc.columns(['organization_id', 'group_key']).doUpdateSet({ role }))
    .execute();
}
