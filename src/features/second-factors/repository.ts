import { type NotNull, sql } from 'kysely';
import type { TotpAlgorithm } from '../../config.js';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';

export interface FactorSecretRow {
  id: string;
  sealed_secret: string;
  algorithm: TotpAlgorithm;
  digits: number;
  period: number;
}

export interface FactorListRow {
  id: string;
  label: string | null;
  verified_at: Date;
  last_used_at: Date | null;
}

export interface TicketRow {
  id: string;
  identity_id: string;
  epoch: number;
  primary_method: string;
  attempts: number;
  max_attempts: number;
  expires_at: Date;
  spent_at: Date | null;
}

/** Any earlier pending enrolment stops confirming once a new one starts (interface 4.6). */
export async function revokePending(trx: Executor, identityId: string, now: Date): Promise<void> {
  await trx
    .updateTable('second_factors')
    .set({ revoked_at: now })
    .where('identity_id', '=', identityId)
    .where('verified_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function insertPending(
  trx: Executor,
  f: {
    id: string;
    identityId: string;
    label: string | null;
    sealedSecret: string;
    algorithm: TotpAlgorithm;
    digits: number;
    period: number;
    now: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO second_factors (id, identity_id, label, sealed_secret, algorithm, digits, period, created_at)
    VALUES (${f.id}, ${f.identityId}, ${f.label}, ${f.sealedSecret}, ${f.algorithm}, ${f.digits}, ${f.period},
            ${f.now})`.execute(trx);
}

export async function pendingFactor(trx: Executor, identityId: string): Promise<FactorSecretRow | undefined> {
  const r = await sql<FactorSecretRow>`
    SELECT id, sealed_secret, algorithm, digits, period FROM second_factors
    WHERE identity_id = ${identityId} AND verified_at IS NULL AND revoked_at IS NULL`.execute(trx);
  return r.rows[0];
}

/**
 * Compare-and-set: verifies the pending row only if it is still pending and the step is newer than
 * any accepted before, so of two confirmations in one time step exactly one wins.
 */
export function verifyPending(trx: Executor, id: string, step: number, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE second_factors SET verified_at = ${now}, last_used_step = ${step}
    WHERE id = ${id} AND verified_at IS NULL AND revoked_at IS NULL
      AND (last_used_step IS NULL OR last_used_step < ${step})
    RETURNING id`,
  );
}

/** The identity's verified, live factors: the ones whose codes it may answer with. */
function verifiedOf(trx: Executor, identityId: string) {
  return trx
    .selectFrom('second_factors')
    .where('identity_id', '=', identityId)
    .where('verified_at', 'is not', null)
    .where('revoked_at', 'is', null);
}

/** Oldest verification first, with what checking a code needs. */
export function verifiedFactors(trx: Executor, identityId: string): Promise<FactorSecretRow[]> {
  return verifiedOf(trx, identityId)
    .select(['id', 'sealed_secret', 'algorithm', 'digits', 'period'])
    .$narrowType<{ algorithm: TotpAlgorithm }>()
    .orderBy('verified_at')
    .orderBy('id')
    .execute();
}

export async function hasVerifiedFactor(trx: Executor, identityId: string): Promise<boolean> {
  return (await verifiedOf(trx, identityId).select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Compare-and-set on the last used step: a code is accepted once per factor and time step. */
export function useFactor(trx: Executor, id: string, step: number, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE second_factors SET last_used_step = ${step}, last_used_at = ${now}
    WHERE id = ${id} AND verified_at IS NOT NULL AND revoked_at IS NULL
      AND (last_used_step IS NULL OR last_used_step < ${step})
    RETURNING id`,
  );
}

/** Newest verification first, the id as unique tiebreak. */
export function verifiedPage(
  trx: Executor,
  identityId: string,
  window: KeysetWindow,
): Promise<FactorListRow[]> {
  return verifiedOf(trx, identityId)
    .select(['id', 'label', 'verified_at', 'last_used_at'])
    .$narrowType<{ verified_at: NotNull }>()
    .where(afterPosition('verified_at', window))
    .orderBy('verified_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/** Only a verified, live factor of this identity can be removed; anything else is "not found". */
export async function revokeVerified(
  trx: Executor,
  id: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  const revoked = await trx
    .updateTable('second_factors')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('identity_id', '=', identityId)
    .where('verified_at', 'is not', null)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return revoked.length === 1;
}

export async function insertTicket(
  trx: Executor,
  t: {
    id: string;
    hash: string;
    identityId: string;
    epoch: number;
    primaryMethod: string;
    maxAttempts: number;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO second_factor_tickets
      (id, ticket_hash, identity_id, epoch, primary_method, attempts, max_attempts, created_at, expires_at)
    VALUES (${t.id}, ${t.hash}, ${t.identityId}, ${t.epoch}, ${t.primaryMethod}, 0, ${t.maxAttempts}, ${t.now},
            ${t.expiresAt})`.execute(trx);
}

/** Whose ticket this is, without a lock (to charge the right guess budget before the answer). */
export async function ticketHolder(db: Executor, tokenHash: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('second_factor_tickets')
    .select('identity_id')
    .where('ticket_hash', '=', tokenHash)
    .executeTakeFirst();
  return row?.identity_id;
}

/** Row lock: two completions of one ticket are decided one after the other. */
export async function lockTicket(trx: Executor, hash: string): Promise<TicketRow | undefined> {
  const r = await sql<TicketRow>`
    SELECT id, identity_id, epoch, primary_method, attempts, max_attempts, expires_at, spent_at
    FROM second_factor_tickets WHERE ticket_hash = ${hash} FOR UPDATE`.execute(trx);
  return r.rows[0];
}

/** Compare-and-set: spends the ticket only while it is live at `now`. */
export function spendTicket(trx: Executor, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE second_factor_tickets SET spent_at = ${now}
    WHERE id = ${id} AND spent_at IS NULL AND expires_at > ${now} AND attempts < max_attempts
    RETURNING id`,
  );
}

export async function chargeTicket(trx: Executor, id: string): Promise<number> {
  const r = await sql<{ attempts: number }>`
    UPDATE second_factor_tickets SET attempts = attempts + 1 WHERE id = ${id} RETURNING attempts`.execute(
    trx,
  );
  return r.rows[0]?.attempts ?? 0;
}

/** Erasure: every second factor of the identity and every ticket it was handed. */
export async function deleteIdentityFactors(trx: Executor, identityId: string): Promise<void> {
  await sql`DELETE FROM second_factor_tickets WHERE identity_id = ${identityId}`.execute(trx);
  await sql`DELETE FROM second_factors WHERE identity_id = ${identityId}`.execute(trx);
}
