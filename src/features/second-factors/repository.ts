import type { NotNull } from 'kysely';
import type { TotpAlgorithm } from '../../config.js';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';

export interface FactorSecretRow {
  id: string;
  sealedSecret: string;
  algorithm: TotpAlgorithm;
  digits: number;
  period: number;
}

export interface FactorListRow {
  id: string;
  label: string | null;
  verifiedAt: Date;
  lastUsedAt: Date | null;
}

export interface TicketRow {
  id: string;
  identityId: string;
  epoch: number;
  primaryMethod: string;
  /** The connection of an SSO first step (method 'sso'), named by the session the ticket opens. */
  ssoConnectionId: string | null;
  attempts: number;
  maxAttempts: number;
  expiresAt: Date;
  spentAt: Date | null;
}

/**
 * Any earlier pending enrolment stops confirming once a new one starts (docs/decisions.md, "Step-up,
 * second factors, recovery codes, lock", TOTP).
 */
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
  await trx
    .insertInto('second_factors')
    .values({
      id: f.id,
      identity_id: f.identityId,
      label: f.label,
      sealed_secret: f.sealedSecret,
      algorithm: f.algorithm,
      digits: f.digits,
      period: f.period,
      created_at: f.now,
    })
    .execute();
}

/** What checking a code needs, under the domain's names. */
const SECRET_COLUMNS = ['id', 'sealed_secret as sealedSecret', 'algorithm', 'digits', 'period'] as const;

export function pendingFactor(trx: Executor, identityId: string): Promise<FactorSecretRow | undefined> {
  return trx
    .selectFrom('second_factors')
    .select(SECRET_COLUMNS)
    .$narrowType<{ algorithm: TotpAlgorithm }>()
    .where('identity_id', '=', identityId)
    .where('verified_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Compare-and-set: verifies the pending row only if it is still pending and the step is newer than
 * any accepted before, so of two confirmations in one time step exactly one wins.
 */
export async function verifyPending(trx: Executor, id: string, step: number, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('second_factors')
      .set({ verified_at: now, last_used_step: step })
      .where('id', '=', id)
      .where('verified_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', step)]))
      .returning('id'),
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
    .select(SECRET_COLUMNS)
    .$narrowType<{ algorithm: TotpAlgorithm }>()
    .orderBy('verified_at')
    .orderBy('id')
    .execute();
}

export async function hasVerifiedFactor(trx: Executor, identityId: string): Promise<boolean> {
  return (await verifiedOf(trx, identityId).select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Compare-and-set on the last used step: a code is accepted once per factor and time step. */
export async function useFactor(trx: Executor, id: string, step: number, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('second_factors')
      .set({ last_used_step: step, last_used_at: now })
      .where('id', '=', id)
      .where('verified_at', 'is not', null)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', step)]))
      .returning('id'),
  );
}

/** One factor by id, as its events show it (no secret). */
export function factorById(
  trx: Executor,
  id: string,
): Promise<(FactorListRow & { identityId: string; revokedAt: Date | null }) | undefined> {
  return trx
    .selectFrom('second_factors')
    .select([
      'id',
      'identity_id as identityId',
      'label',
      'verified_at as verifiedAt',
      'last_used_at as lastUsedAt',
      'revoked_at as revokedAt',
    ])
    .$narrowType<{ verifiedAt: NotNull }>()
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Newest verification first, the id as unique tiebreak. */
export function verifiedPage(
  trx: Executor,
  identityId: string,
  window: KeysetWindow,
): Promise<FactorListRow[]> {
  return verifiedOf(trx, identityId)
    .select(['id', 'label', 'verified_at as verifiedAt', 'last_used_at as lastUsedAt'])
    .$narrowType<{ verifiedAt: NotNull }>()
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
  return changedOne(
    trx
      .updateTable('second_factors')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('identity_id', '=', identityId)
      .where('verified_at', 'is not', null)
      .where('revoked_at', 'is', null)
      .returning('id'),
  );
}

export async function insertTicket(
  trx: Executor,
  t: {
    id: string;
    hash: string;
    identityId: string;
    epoch: number;
    primaryMethod: string;
    ssoConnectionId?: string | null;
    maxAttempts: number;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await trx
    .insertInto('second_factor_tickets')
    .values({
      id: t.id,
      ticket_hash: t.hash,
      identity_id: t.identityId,
      epoch: t.epoch,
      primary_method: t.primaryMethod,
      sso_connection_id: t.ssoConnectionId ?? null,
      attempts: 0,
      max_attempts: t.maxAttempts,
      created_at: t.now,
      expires_at: t.expiresAt,
    })
    .execute();
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
export function lockTicket(trx: Executor, hash: string): Promise<TicketRow | undefined> {
  return trx
    .selectFrom('second_factor_tickets')
    .select([
      'id',
      'identity_id as identityId',
      'epoch',
      'primary_method as primaryMethod',
      'sso_connection_id as ssoConnectionId',
      'attempts',
      'max_attempts as maxAttempts',
      'expires_at as expiresAt',
      'spent_at as spentAt',
    ])
    .where('ticket_hash', '=', hash)
    .forUpdate()
    .executeTakeFirst();
}

/** Compare-and-set: spends the ticket only while it is live at `now`. */
export async function spendTicket(trx: Executor, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('second_factor_tickets')
      .set({ spent_at: now })
      .where('id', '=', id)
      .where('spent_at', 'is', null)
      .where('expires_at', '>', now)
      .whereRef('attempts', '<', 'max_attempts')
      .returning('id'),
  );
}

export async function chargeTicket(trx: Executor, id: string): Promise<number> {
  const r = await trx
    .updateTable('second_factor_tickets')
    .set((eb) => ({ attempts: eb('attempts', '+', eb.lit(1)) }))
    .where('id', '=', id)
    .returning('attempts')
    .executeTakeFirst();
  return r?.attempts ?? 0;
}

/** Erasure: every second factor of the identity and every ticket it was handed. */
export async function deleteIdentityFactors(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('second_factor_tickets').where('identity_id', '=', identityId).execute();
  await trx.deleteFrom('second_factors').where('identity_id', '=', identityId).execute();
}

/** Verified authenticator-app factors brought by an import, in one statement. */
export async function insertImportedFactors(
  trx: Executor,
  rows: {
    id: string;
    identityId: string;
    sealedSecret: string;
    algorithm: TotpAlgorithm;
    digits: number;
    period: number;
    now: Date;
  }[],
): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('second_factors')
    .values(
      rows.map((f) => ({
        id: f.id,
        identity_id: f.identityId,
        label: null,
        sealed_secret: f.sealedSecret,
        algorithm: f.algorithm,
        digits: f.digits,
        period: f.period,
        created_at: f.now,
        verified_at: f.now,
      })),
    )
    .execute();
}

/** The verified, live factors of these identities, sealed (an export). */
export async function factorsForExport(trx: Executor, identityIds: string[]) {
  if (identityIds.length === 0) return [];
  return trx
    .selectFrom('second_factors')
    .select([
      'id',
      'identity_id as identityId',
      'sealed_secret as sealedSecret',
      'algorithm',
      'digits',
      'period',
    ])
    .where('identity_id', 'in', identityIds)
    .where('verified_at', 'is not', null)
    .where('revoked_at', 'is', null)
    .orderBy('verified_at')
    .execute();
}
