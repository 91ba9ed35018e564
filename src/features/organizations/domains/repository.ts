import type { Executor } from '../../../platform/db/database.js';
import type { KeysetWindow } from '../../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../../platform/pagination/repository.js';

/** The one writer of `organization_domains` (docs/architecture.md, "Tables and their owners"). */

export type VerifiedBy = 'dns' | 'operator';

export interface DomainRow {
  id: string;
  organizationId: string;
  domain: string;
  token: string;
  createdAt: Date;
  verifiedAt: Date | null;
  verifiedBy: VerifiedBy | null;
  lastCheckedAt: Date | null;
}

const columns = [
  'id',
  'organization_id as organizationId',
  'domain',
  'verification_token as token',
  'created_at as createdAt',
  'verified_at as verifiedAt',
  'verified_by as verifiedBy',
  'last_checked_at as lastCheckedAt',
] as const;

/** False when the organization already claims this domain: the unique index decides. */
export async function insertDomain(
  trx: Executor,
  d: { id: string; organizationId: string; domain: string; token: string; now: Date },
): Promise<boolean> {
  const rows = await trx
    .insertInto('organization_domains')
    .values({
      id: d.id,
      organization_id: d.organizationId,
      domain: d.domain,
      verification_token: d.token,
      created_at: d.now,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'domain']).doNothing())
    .returning('id')
    .execute();
  return rows.length === 1;
}

export function domainById(
  trx: Executor,
  organizationId: string,
  domainId: string,
): Promise<DomainRow | undefined> {
  return trx
    .selectFrom('organization_domains')
    .select(columns)
    .$narrowType<{ verifiedBy: VerifiedBy | null }>()
    .where('organization_id', '=', organizationId)
    .where('id', '=', domainId)
    .executeTakeFirst();
}

/** The organization that has verified `domain`, if any (at most one: the partial unique index). */
export async function verifiedOwner(trx: Executor, domain: string): Promise<string | undefined> {
  const row = await trx
    .selectFrom('organization_domains')
    .select('organization_id')
    .where('domain', '=', domain)
    .where('verified_at', 'is not', null)
    .executeTakeFirst();
  return row?.organization_id;
}

export function domainsPage(
  trx: Executor,
  organizationId: string,
  window: KeysetWindow,
): Promise<DomainRow[]> {
  return trx
    .selectFrom('organization_domains')
    .select(columns)
    .$narrowType<{ verifiedBy: VerifiedBy | null }>()
    .where('organization_id', '=', organizationId)
    .where(afterPosition('created_at', window, 'id'))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/**
 * Marks an unverified claim verified. False when there is no such unverified claim. Throws the
 * database's unique violation (23505) when another organization's verification of the same domain
 * committed first, or commits while this one waits on the index: the caller answers 409.
 */
export async function markVerified(
  trx: Executor,
  d: { organizationId: string; domainId: string; by: VerifiedBy; now: Date },
): Promise<boolean> {
  const rows = await trx
    .updateTable('organization_domains')
    .set({ verified_at: d.now, verified_by: d.by, last_checked_at: d.now })
    .where('organization_id', '=', d.organizationId)
    .where('id', '=', d.domainId)
    .where('verified_at', 'is', null)
    .returning('id')
    .execute();
  return rows.length === 1;
}

/** Records when a DNS check of the claim last ran (one that did not verify it). */
export async function markChecked(trx: Executor, domainId: string, now: Date): Promise<void> {
  await trx
    .updateTable('organization_domains')
    .set({ last_checked_at: now })
    .where('id', '=', domainId)
    .execute();
}

export async function deleteDomain(
  trx: Executor,
  organizationId: string,
  domainId: string,
): Promise<boolean> {
  const rows = await trx
    .deleteFrom('organization_domains')
    .where('organization_id', '=', organizationId)
    .where('id', '=', domainId)
    .returning('id')
    .execute();
  return rows.length === 1;
}

/** Whether `error` is PostgreSQL's unique violation (the server's driver and PGlite alike). */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
