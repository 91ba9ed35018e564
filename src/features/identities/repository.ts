import { sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { NormalisedIdentifier } from './identifier.js';

export interface IdentifierRow {
  id: string;
  identity_id: string;
  type: 'email' | 'phone';
  value: string;
  verified_at: Date | null;
}

export interface IdentityRow {
  id: string;
  password_hash: string | null;
  session_epoch: number;
  failed_attempts: number;
  locked_until: Date | null;
  /** Set by an operator: every sign-in of this identity is refused (issue 14). */
  disabled_at: Date | null;
  /** Set by an operator's erasure: nothing but the bare id is left, and nothing changes it again. */
  erased_at: Date | null;
}

/**
 * The nil UUID: no identity or identifier has it, so a statement keyed by it matches nothing. A
 * refusal for an address no account holds runs its statements keyed by NOBODY, so it costs what a
 * refusal for an account costs (equal time).
 */
export const NOBODY = '00000000-0000-0000-0000-000000000000';

/** The live (not removed) identifier row for a normalised address, whoever owns it. */
export async function findIdentifier(
  trx: Executor,
  ident: NormalisedIdentifier,
): Promise<IdentifierRow | undefined> {
  const r = await sql<IdentifierRow>`
    SELECT id, identity_id, type, value, verified_at FROM identifiers
    WHERE type = ${ident.type} AND value = ${ident.value} AND removed_at IS NULL`.execute(trx);
  return r.rows[0];
}

/** What a password sign-in needs of an address, in one statement: its identity, epoch and hash. */
export interface PasswordHolder {
  identity_id: string;
  verified_at: Date | null;
  password_hash: string | null;
  session_epoch: number;
  disabled_at: Date | null;
}

export async function findPasswordHolder(
  trx: Executor,
  ident: NormalisedIdentifier,
): Promise<PasswordHolder | undefined> {
  const r = await sql<PasswordHolder>`
    SELECT i.identity_id, i.verified_at, p.password_hash, p.session_epoch, p.disabled_at
    FROM identifiers i JOIN identities p ON p.id = i.identity_id
    WHERE i.type = ${ident.type} AND i.value = ${ident.value} AND i.removed_at IS NULL`.execute(trx);
  return r.rows[0];
}

export async function findIdentity(
  trx: Executor,
  id: string,
  forUpdate = false,
): Promise<IdentityRow | undefined> {
  const r = forUpdate
    ? await sql<IdentityRow>`
        SELECT id, password_hash, session_epoch, failed_attempts, locked_until, disabled_at, erased_at FROM identities WHERE id = ${id} FOR UPDATE`.execute(
        trx,
      )
    : await sql<IdentityRow>`
        SELECT id, password_hash, session_epoch, failed_attempts, locked_until, disabled_at, erased_at FROM identities WHERE id = ${id}`.execute(
        trx,
      );
  return r.rows[0];
}

/** Locks the identity row: the first lock of anything that counts or rewrites an identity's set. */
export async function lockIdentity(trx: Executor, id: string): Promise<IdentityRow | undefined> {
  return findIdentity(trx, id, true);
}

export async function verifiedIdentifiers(trx: Executor, identityId: string): Promise<IdentifierRow[]> {
  const r = await sql<IdentifierRow>`
    SELECT id, identity_id, type, value, verified_at FROM identifiers
    WHERE identity_id = ${identityId} AND verified_at IS NOT NULL AND removed_at IS NULL
    ORDER BY verified_at, id`.execute(trx);
  return r.rows;
}

/**
 * Ends every session of an identity that was issued before now: bumping the epoch kills sessions
 * still committing with the old one (concurrency guide: sign-out everywhere vs in-flight sign-ins).
 */
export async function bumpSessionEpoch(trx: Executor, identityId: string): Promise<number> {
  const r = await sql<{ session_epoch: number }>`
    UPDATE identities SET session_epoch = session_epoch + 1 WHERE id = ${identityId} RETURNING session_epoch`.execute(
    trx,
  );
  return r.rows[0].session_epoch;
}

export interface IdentitySummary {
  identifiers: IdentifierRow[];
  /** The ways the identity can prove itself (contract 3), in a fixed order. */
  methods: string[];
}

export interface SummaryColumns {
  has_password: boolean;
  second_factor: boolean;
  provider: boolean;
  passkey: boolean;
  identifiers: { id: string; type: 'email' | 'phone'; value: string; verified_at: string }[];
}

/**
 * The columns of an identity summary, for a query where `i` is the identities row: verified
 * identifiers and active methods come back with whatever else that query reads, in one round trip
 * (the session context is on the hot path). Each feature that adds a kind of method adds its
 * clause here.
 */
export const summaryColumns = sql`
  i.password_hash IS NOT NULL AS has_password,
  EXISTS (SELECT 1 FROM second_factors t WHERE t.identity_id = i.id
          AND t.verified_at IS NOT NULL AND t.revoked_at IS NULL) AS second_factor,
  EXISTS (SELECT 1 FROM provider_links l WHERE l.identity_id = i.id AND l.removed_at IS NULL) AS provider,
  EXISTS (SELECT 1 FROM passkeys k WHERE k.identity_id = i.id AND k.removed_at IS NULL) AS passkey,
  COALESCE((SELECT json_agg(json_build_object('id', f.id, 'type', f.type, 'value', f.value,
                                              'verified_at', f.verified_at) ORDER BY f.verified_at, f.id)
            FROM identifiers f
            WHERE f.identity_id = i.id AND f.verified_at IS NOT NULL AND f.removed_at IS NULL),
           '[]'::json) AS identifiers`;

export function toSummary(identityId: string, row: SummaryColumns): IdentitySummary {
  const identifiers = row.identifiers.map((f) => ({
    id: f.id,
    identity_id: identityId,
    type: f.type,
    value: f.value,
    verified_at: new Date(f.verified_at),
  }));
  const methods: string[] = [];
  if (row.has_password) methods.push('password');
  if (identifiers.some((f) => f.type === 'email')) methods.push('email');
  if (identifiers.some((f) => f.type === 'phone')) methods.push('phone');
  if (row.provider) methods.push('provider');
  if (row.passkey) methods.push('passkey');
  if (row.second_factor) methods.push('second_factor');
  return { identifiers, methods };
}

export async function insertIdentity(
  trx: Executor,
  identity: { id: string; createdAt: Date },
): Promise<void> {
  await sql`INSERT INTO identities (id, created_at) VALUES (${identity.id}, ${identity.createdAt})`.execute(
    trx,
  );
}

/** Only for an identity this transaction created and that lost the race for its identifier or link. */
export async function deleteFreshIdentity(trx: Executor, id: string): Promise<void> {
  await sql`DELETE FROM identities WHERE id = ${id}`.execute(trx);
}

/**
 * Sets the identity's password. With `onlyIfUnset` it only fills a pending identity's empty
 * password (a confirmed sign-up) and answers false when one is already set.
 */
export async function setPassword(
  trx: Executor,
  identityId: string,
  passwordHash: string,
  now: Date,
  opts: { onlyIfUnset?: boolean } = {},
): Promise<boolean> {
  const unset = opts.onlyIfUnset ? sql`AND password_hash IS NULL` : sql``;
  return changedOne(
    trx,
    sql`
    UPDATE identities SET password_hash = ${passwordHash}, password_changed_at = ${now}
    WHERE id = ${identityId} ${unset}
    RETURNING id`,
  );
}

export function removePassword(trx: Executor, identityId: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE identities SET password_hash = NULL, password_changed_at = ${now}
    WHERE id = ${identityId} AND password_hash IS NOT NULL
    RETURNING id`,
  );
}

/** The identity-wide lock's counter, read under the row lock (identities/lock.ts). */
/** What one counted failure did to an identity's lock (countLockFailure). */
export interface LockCount {
  /** The lock was running before this failure. */
  wasLocked: boolean;
  /** The lock's end after this failure; null when unlocked. */
  lockedUntil: Date | null;
}

/**
 * Counts one failure on the identity's lock in one statement, and returns the lock as it was and
 * as it is. The row is locked FOR UPDATE in the subquery, so concurrent failures count one by one
 * and exactly one of them sees the count cross `threshold` (PostgreSQL 15 has no OLD in RETURNING:
 * the subquery carries the old values). A lock that ran out starts the count again; a running lock
 * keeps its end. An identity that does not exist counts nothing, in the same statement, so a caller
 * with nobody to charge does the same work as one with somebody (equal time).
 */
export async function countLockFailure(
  trx: Executor,
  identityId: string,
  now: Date,
  threshold: number,
  lockUntil: Date,
): Promise<LockCount | undefined> {
  const running = sql`old.locked_until > ${now}::timestamptz`;
  const failures = sql`CASE WHEN ${running} THEN old.failed_attempts + 1
      WHEN old.locked_until IS NOT NULL THEN 1 ELSE old.failed_attempts + 1 END`;
  const r = await sql<{ was_locked: boolean; locked_until: Date | null }>`
    UPDATE identities AS i SET
      failed_attempts = ${failures},
      locked_until = CASE WHEN ${running} THEN old.locked_until
        WHEN ${failures} >= ${threshold}::int THEN ${lockUntil}::timestamptz ELSE NULL END
    FROM (SELECT id, failed_attempts, locked_until FROM identities WHERE id = ${identityId} FOR UPDATE) AS old
    WHERE i.id = old.id
    RETURNING coalesce(${running}, false) AS was_locked, i.locked_until`.execute(trx);
  const row = r.rows[0];
  return row && { wasLocked: row.was_locked, lockedUntil: row.locked_until };
}

/**
 * Claims a normalised address for an identity: unverified (a sign-up) or already verified (a
 * sign-in method proven by its code). The partial unique index decides between concurrent claims:
 * a loser waits for the winner's commit and gets undefined, never an error, so it can go on to
 * read the winner's row in the same transaction.
 */
export async function claimIdentifier(
  trx: Executor,
  row: { id: string; identityId: string; identifier: NormalisedIdentifier; now: Date; verified: boolean },
): Promise<string | undefined> {
  const verifiedAt = row.verified ? row.now : null;
  const r = await sql<{ id: string }>`
    INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
    VALUES (${row.id}, ${row.identityId}, ${row.identifier.type}, ${row.identifier.value}, ${row.now}, ${verifiedAt})
    ON CONFLICT (type, value) WHERE removed_at IS NULL DO NOTHING
    RETURNING id`.execute(trx);
  return r.rows[0]?.id;
}

/**
 * False when the identifier was verified or removed meanwhile (or, with `identityId`, belongs to
 * another identity): the confirmation must not proceed.
 */
export async function markIdentifierVerified(
  trx: Executor,
  identifierId: string,
  now: Date,
  identityId?: string,
): Promise<boolean> {
  const owner = identityId ? sql`AND identity_id = ${identityId}` : sql``;
  return changedOne(
    trx,
    sql`
    UPDATE identifiers SET verified_at = ${now}
    WHERE id = ${identifierId} ${owner} AND verified_at IS NULL AND removed_at IS NULL
    RETURNING id`,
  );
}

/**
 * Removes a live identifier: a verified one of its owner (`identityId`), or with `pendingOnly` a
 * registration that was never confirmed (it yields to the identity that proved the address from
 * a session). False when nothing matched. The caller revokes the codes in flight to it.
 */
export async function removeIdentifier(
  trx: Executor,
  identifierId: string,
  now: Date,
  which: { identityId: string } | { pendingOnly: true },
): Promise<boolean> {
  const condition = 'identityId' in which ? sql`identity_id = ${which.identityId}` : sql`verified_at IS NULL`;
  return changedOne(
    trx,
    sql`
    UPDATE identifiers SET removed_at = ${now}
    WHERE id = ${identifierId} AND ${condition} AND removed_at IS NULL
    RETURNING id`,
  );
}

export async function clearLockCounter(trx: Executor, identityId: string): Promise<void> {
  await sql`UPDATE identities SET failed_attempts = 0, locked_until = NULL WHERE id = ${identityId}`.execute(
    trx,
  );
}

/** An operator's disablement; the first time is kept. False when it was disabled already. */
export function disableIdentity(trx: Executor, identityId: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`UPDATE identities SET disabled_at = ${now} WHERE id = ${identityId} AND disabled_at IS NULL RETURNING id`,
  );
}

/** An operator's enablement; an erased identity stays disabled. False when nothing changed. */
export function enableIdentity(trx: Executor, identityId: string): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE identities SET disabled_at = NULL
    WHERE id = ${identityId} AND disabled_at IS NOT NULL AND erased_at IS NULL RETURNING id`,
  );
}

/**
 * Erasure of the identity's own rows (the caller holds the row lock and has already deleted the
 * challenges that name its identifiers): every identifier, live or removed, is deleted, and the
 * identity keeps only its id, its creation time, its epoch and the instants it was disabled and
 * erased: no password, no lock. Answers how many identifiers were deleted.
 */
export async function eraseIdentity(trx: Executor, identityId: string, now: Date): Promise<number> {
  const gone = await sql`DELETE FROM identifiers WHERE identity_id = ${identityId} RETURNING id`.execute(trx);
  await sql`
    UPDATE identities SET password_hash = NULL, password_changed_at = NULL, failed_attempts = 0,
      locked_until = NULL, disabled_at = coalesce(disabled_at, ${now}), erased_at = ${now}
    WHERE id = ${identityId}`.execute(trx);
  return gone.rows.length;
}
