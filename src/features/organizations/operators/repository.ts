import type { Executor } from '../../../platform/db/database.js';
import type { KeysetWindow } from '../../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../../platform/pagination/repository.js';

// The operators' reads (and row locks) of organizations; every write goes through the table's one
// writer, ../repository.ts.

/** An organization as operators see it: live or disabled. */
export interface AdminOrganizationRow {
  id: string;
  name: string;
  slug: string;
  requireSecondFactor: boolean;
  requireSso: boolean;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  disabledAt: Date | null;
}

const columns = [
  'o.id',
  'o.name',
  'o.slug',
  'o.require_second_factor as requireSecondFactor',
  'o.require_sso as requireSso',
  'o.created_by as createdBy',
  'o.created_at as createdAt',
  'o.updated_at as updatedAt',
  'o.disabled_at as disabledAt',
] as const;

/** One page of every organization, disabled ones included, newest first. */
export function organizationsPage(trx: Executor, window: KeysetWindow): Promise<AdminOrganizationRow[]> {
  return trx
    .selectFrom('organizations as o')
    .select(columns)
    .where(afterPosition('o.created_at', window, 'o.id'))
    .orderBy('o.created_at', 'desc')
    .orderBy('o.id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/** One organization with its member and owner counts; undefined when there is none. */
export async function organizationDetail(trx: Executor, organizationId: string) {
  const row = await trx
    .selectFrom('organizations as o')
    .select((eb) => [
      ...columns,
      eb
        .selectFrom('organization_memberships as m')
        .select((m) => m.fn.countAll<string>().as('n'))
        .whereRef('m.organization_id', '=', 'o.id')
        .as('members'),
      eb
        .selectFrom('organization_memberships as m')
        .select((m) => m.fn.countAll<string>().as('n'))
        .whereRef('m.organization_id', '=', 'o.id')
        .where('m.role', '=', 'owner')
        .as('owners'),
    ])
    .where('o.id', '=', organizationId)
    .executeTakeFirst();
  if (!row) return undefined;
  return { ...row, members: Number(row.members ?? 0), owners: Number(row.owners ?? 0) };
}

/**
 * Locks the organization row (FOR UPDATE) whether or not it is disabled: the operators' writes
 * take the same lock as every membership change (../repository.ts, lockOrganization),
 * so the last-owner rule holds between them too.
 */
export function lockAnyOrganization(
  trx: Executor,
  organizationId: string,
): Promise<AdminOrganizationRow | undefined> {
  return trx
    .selectFrom('organizations as o')
    .select(columns)
    .where('o.id', '=', organizationId)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * The identity a membership is about to name, held FOR KEY SHARE until the commit: an erasure
 * (which holds the row FOR UPDATE) runs wholly before or after, and a read after it sees erased_at.
 * KEY SHARE, not UPDATE: the membership insert's own foreign-key check takes the same lock, so an
 * invitation's acceptance (organization lock, then this lock through the insert) never deadlocks
 * with this order (this lock, then the organization's).
 */
export function shareIdentity(
  trx: Executor,
  identityId: string,
): Promise<{ id: string; erasedAt: Date | null } | undefined> {
  return trx
    .selectFrom('identities')
    .select(['id', 'erased_at as erasedAt'])
    .where('id', '=', identityId)
    .forKeyShare()
    .executeTakeFirst();
}
