import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';

export interface SessionState {
  id: string;
  identity_id: string;
  epoch: number;
  identity_epoch: number;
  expires_at: Date;
  revoked_at: Date | null;
  generation: number;
}

export interface NewSession {
  id: string;
  identityId: string;
  epoch: number;
  method: string;
  now: Date;
  expiresAt: Date;
  refreshHash: string;
}

export async function insertSession(trx: Executor, s: NewSession): Promise<void> {
  await sql`
    INSERT INTO sessions (id, identity_id, epoch, method, created_at, expires_at, generation)
    VALUES (${s.id}, ${s.identityId}, ${s.epoch}, ${s.method}, ${s.now}, ${s.expiresAt}, 1)`.execute(trx);
  await sql`
    INSERT INTO refresh_tokens (hash, session_id, generation, created_at)
    VALUES (${s.refreshHash}, ${s.id}, 1, ${s.now})`.execute(trx);
}

/** The guard's read: one primary-key lookup of the session joined to its identity's epoch. */
export async function sessionState(trx: Executor, sessionId: string): Promise<SessionState | undefined> {
  const r = await sql<SessionState>`
    SELECT s.id, s.identity_id, s.epoch, i.session_epoch AS identity_epoch, s.expires_at, s.revoked_at, s.generation
    FROM sessions s JOIN identities i ON i.id = s.identity_id
    WHERE s.id = ${sessionId}`.execute(trx);
  return r.rows[0];
}

export async function lockSession(trx: Executor, sessionId: string): Promise<SessionState | undefined> {
  const r = await sql<SessionState>`
    SELECT s.id, s.identity_id, s.epoch, i.session_epoch AS identity_epoch, s.expires_at, s.revoked_at, s.generation
    FROM sessions s JOIN identities i ON i.id = s.identity_id
    WHERE s.id = ${sessionId} FOR UPDATE OF s`.execute(trx);
  return r.rows[0];
}

export interface RenewalRow extends SessionState {
  token_generation: number;
  spent_at: Date | null;
}

/**
 * The presented token and its session, both locked in one statement (token row, then session
 * row, the same order for every renewal). Under READ COMMITTED a session changed by a concurrent
 * commit is re-read after the lock, so the checks below see its latest state.
 */
export async function lockForRenewal(trx: Executor, hash: string): Promise<RenewalRow | undefined> {
  const r = await sql<RenewalRow>`
    SELECT t.generation AS token_generation, t.spent_at,
           s.id, s.identity_id, s.epoch, i.session_epoch AS identity_epoch, s.expires_at, s.revoked_at, s.generation
    FROM refresh_tokens t
    JOIN sessions s ON s.id = t.session_id
    JOIN identities i ON i.id = s.identity_id
    WHERE t.hash = ${hash}
    FOR UPDATE OF t, s`.execute(trx);
  return r.rows[0];
}

/**
 * Rotation as one compare-and-set statement: spends the presented generation, moves the session
 * to the next and stores the new token; no row comes back (false) when any step's condition no
 * longer holds, and then nothing is written.
 */
export async function rotateRefreshToken(
  trx: Executor,
  sessionId: string,
  oldHash: string,
  generation: number,
  newHash: string,
  now: Date,
): Promise<boolean> {
  const r = await sql`
    WITH spent AS (
      UPDATE refresh_tokens SET spent_at = ${now}
      WHERE hash = ${oldHash} AND spent_at IS NULL AND generation = ${generation} AND session_id = ${sessionId}
      RETURNING session_id
    ), moved AS (
      UPDATE sessions SET generation = generation + 1, renewed_at = ${now}
      WHERE id IN (SELECT session_id FROM spent) AND generation = ${generation} AND revoked_at IS NULL
      RETURNING id
    )
    INSERT INTO refresh_tokens (hash, session_id, generation, created_at)
    SELECT ${newHash}, id, ${generation + 1}, ${now} FROM moved
    RETURNING session_id`.execute(trx);
  return r.rows.length === 1;
}

/** Compare-and-set: the first revocation's time and reason are kept. */
export async function revokeSession(
  trx: Executor,
  sessionId: string,
  reason: string,
  now: Date,
): Promise<boolean> {
  const r = await sql`
    UPDATE sessions SET revoked_at = ${now}, revoked_reason = ${reason}
    WHERE id = ${sessionId} AND revoked_at IS NULL RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

export async function revokeIdentitySessions(
  trx: Executor,
  identityId: string,
  reason: string,
  now: Date,
  exceptSessionId?: string,
): Promise<number> {
  const r = exceptSessionId
    ? await sql`
        UPDATE sessions SET revoked_at = ${now}, revoked_reason = ${reason}
        WHERE identity_id = ${identityId} AND revoked_at IS NULL AND id <> ${exceptSessionId} RETURNING id`.execute(
        trx,
      )
    : await sql`
        UPDATE sessions SET revoked_at = ${now}, revoked_reason = ${reason}
        WHERE identity_id = ${identityId} AND revoked_at IS NULL RETURNING id`.execute(trx);
  return r.rows.length;
}

/** Moves one session to the identity's current epoch (password change keeps the caller alive). */
export async function adoptEpoch(trx: Executor, sessionId: string, epoch: number): Promise<void> {
  await sql`UPDATE sessions SET epoch = ${epoch} WHERE id = ${sessionId}`.execute(trx);
}

export interface AttemptRow {
  id: string;
  occurred_at: Date;
  method: string;
  outcome: 'succeeded' | 'refused';
  ip_address: string | null;
  user_agent: string | null;
}

export async function recordAttempt(
  trx: Executor,
  a: {
    identityId: string;
    now: Date;
    method: string;
    outcome: 'succeeded' | 'refused';
    ip: string | null;
    userAgent: string | null;
  },
): Promise<void> {
  await sql`
    INSERT INTO sign_in_attempts (id, identity_id, occurred_at, method, outcome, ip_address, user_agent)
    VALUES (gen_random_uuid(), ${a.identityId}, ${a.now}, ${a.method}, ${a.outcome}, ${a.ip}, ${a.userAgent})`.execute(
    trx,
  );
}

/** Newest first with the id as unique tiebreak; `after` is the last row of the previous page. */
export async function attemptsPage(
  trx: Executor,
  identityId: string,
  limit: number,
  after?: { t: string; id: string },
): Promise<AttemptRow[]> {
  const r = after
    ? await sql<AttemptRow>`
        SELECT id, occurred_at, method, outcome, ip_address, user_agent FROM sign_in_attempts
        WHERE identity_id = ${identityId} AND (occurred_at, id) < (${new Date(after.t)}, ${after.id}::uuid)
        ORDER BY occurred_at DESC, id DESC LIMIT ${limit + 1}`.execute(trx)
    : await sql<AttemptRow>`
        SELECT id, occurred_at, method, outcome, ip_address, user_agent FROM sign_in_attempts
        WHERE identity_id = ${identityId}
        ORDER BY occurred_at DESC, id DESC LIMIT ${limit + 1}`.execute(trx);
  return r.rows;
}
