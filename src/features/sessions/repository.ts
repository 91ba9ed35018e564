import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, newestFirst } from '../../platform/pagination/repository.js';
import { type SummaryColumns, summaryColumns } from '../identities/repository.js';

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
  ip: string | null;
  userAgent: string | null;
}

/**
 * Opens a session through its identity's row, only while the identity is not disabled; false when
 * it is. FOR KEY SHARE waits for an operator's disablement or erasure holding the row FOR UPDATE
 * and then re-reads it, so a session (and the address it came from) is never written for an
 * identity disabled or erased meanwhile.
 */
export async function insertSession(trx: Executor, s: NewSession): Promise<boolean> {
  const r = await sql`
    INSERT INTO sessions (id, identity_id, epoch, method, created_at, expires_at, generation, ip_address, user_agent)
    SELECT ${s.id}, id, ${s.epoch}, ${s.method}, ${s.now}, ${s.expiresAt}, 1, ${s.ip}, ${s.userAgent}
    FROM identities WHERE id = ${s.identityId} AND disabled_at IS NULL FOR KEY SHARE
    RETURNING id`.execute(trx);
  if (r.rows.length === 0) return false;
  await sql`
    INSERT INTO refresh_tokens (hash, session_id, generation, created_at)
    VALUES (${s.refreshHash}, ${s.id}, 1, ${s.now})`.execute(trx);
  return true;
}

/** The guard's read: one primary-key lookup of the session joined to its identity's epoch. */
export async function sessionState(trx: Executor, sessionId: string): Promise<SessionState | undefined> {
  const r = await sql<SessionState>`
    SELECT s.id, s.identity_id, s.epoch, i.session_epoch AS identity_epoch, s.expires_at, s.revoked_at, s.generation
    FROM sessions s JOIN identities i ON i.id = s.identity_id
    WHERE s.id = ${sessionId}`.execute(trx);
  return r.rows[0];
}

/** The guard's read and the identity summary together: GET /session/context in one round trip. */
export async function sessionStateWithSummary(
  trx: Executor,
  sessionId: string,
): Promise<(SessionState & SummaryColumns) | undefined> {
  const r = await sql<SessionState & SummaryColumns>`
    SELECT s.id, s.identity_id, s.epoch, i.session_epoch AS identity_epoch, s.expires_at, s.revoked_at, s.generation,
      ${summaryColumns}
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

export type RenewalOutcome =
  | { outcome: 'rotated'; sessionId: string; identityId: string; expiresAt: Date }
  | { outcome: 'replayed' | 'refused' };

/**
 * Renewal as one atomic statement, found by the presented token's hash alone. It locks the token
 * and its session (token row, then session row, the same order for every renewal; under READ
 * COMMITTED a row changed by a concurrent commit is re-read after the lock), then either
 * - rotates: spends the presented generation, moves the session to the next and stores the new
 *   token, only if the token is the session's current generation, unspent, and the session is
 *   live (not revoked, not expired, its epoch still the identity's), and answers whose session it
 *   is (to sign the next access token); or
 * - on a spent or older generation, revokes the session (replay), keeping a first reason;
 * and otherwise (an unknown token, a dead session) writes nothing.
 */
export async function renewSession(
  trx: Executor,
  oldHash: string,
  newHash: string,
  now: Date,
): Promise<RenewalOutcome> {
  const r = await sql<{
    session_id: string | null;
    identity_id: string | null;
    expires_at: Date | null;
    replayed: number;
  }>`
    WITH cur AS (
      SELECT t.hash, t.generation AS token_generation, t.spent_at, s.id, s.identity_id, s.generation,
             s.revoked_at, s.expires_at, s.epoch, i.session_epoch
      FROM refresh_tokens t
      JOIN sessions s ON s.id = t.session_id
      JOIN identities i ON i.id = s.identity_id
      WHERE t.hash = ${oldHash}
      FOR UPDATE OF t, s
    ), live AS (
      SELECT * FROM cur
      WHERE spent_at IS NULL AND token_generation = generation AND revoked_at IS NULL
        AND expires_at > ${now} AND epoch = session_epoch
    ), spent AS (
      UPDATE refresh_tokens r SET spent_at = ${now} FROM live WHERE r.hash = live.hash
      RETURNING live.id, live.generation, live.identity_id, live.expires_at
    ), moved AS (
      UPDATE sessions s SET generation = spent.generation + 1, renewed_at = ${now}
      FROM spent WHERE s.id = spent.id
      RETURNING s.id, s.generation
    ), stored AS (
      INSERT INTO refresh_tokens (hash, session_id, generation, created_at)
      SELECT ${newHash}, id, generation, ${now} FROM moved
      RETURNING session_id
    ), replay AS (
      UPDATE sessions s SET revoked_at = ${now}, revoked_reason = 'refresh_token_replayed'
      FROM cur
      WHERE s.id = cur.id AND s.revoked_at IS NULL
        AND (cur.spent_at IS NOT NULL OR cur.token_generation <> cur.generation)
      RETURNING s.id
    )
    SELECT stored.session_id, spent.identity_id, spent.expires_at,
           (SELECT count(*) FROM replay)::int AS replayed
    FROM (SELECT 1) one
    LEFT JOIN stored ON true
    LEFT JOIN spent ON spent.id = stored.session_id`.execute(trx);
  const row = r.rows[0];
  if (row?.session_id && row.identity_id && row.expires_at) {
    return {
      outcome: 'rotated',
      sessionId: row.session_id,
      identityId: row.identity_id,
      expiresAt: new Date(row.expires_at),
    };
  }
  return { outcome: row?.replayed === 1 ? 'replayed' : 'refused' };
}

/**
 * Takes back a rotation whose answer could not be built (the next access token failed to sign),
 * so the client's retry with the token it still holds is a renewal, not a replay that would end
 * its session. One statement: the new token is deleted only while unspent (it never left the
 * process), the session moves back only from the generation that token made, and only then is
 * the presented token unspent again. A revocation in between stays.
 */
export async function undoRenewal(trx: Executor, oldHash: string, newHash: string): Promise<void> {
  await sql`
    WITH gone AS (
      DELETE FROM refresh_tokens WHERE hash = ${newHash} AND spent_at IS NULL
      RETURNING session_id, generation
    ), back AS (
      UPDATE sessions s SET generation = gone.generation - 1
      FROM gone WHERE s.id = gone.session_id AND s.generation = gone.generation
      RETURNING s.id
    )
    UPDATE refresh_tokens t SET spent_at = NULL FROM back WHERE t.hash = ${oldHash} AND t.session_id = back.id`.execute(
    trx,
  );
}

/** Compare-and-set: the first revocation's time and reason are kept. */
export function revokeSession(trx: Executor, sessionId: string, reason: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE sessions SET revoked_at = ${now}, revoked_reason = ${reason}
    WHERE id = ${sessionId} AND revoked_at IS NULL RETURNING id`,
  );
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
  notice_sent_at: Date | null;
}

export async function recordAttempt(
  trx: Executor,
  a: {
    /** Given when the row is to be found again (a provisional refusal, deleted on success). */
    id?: string;
    identityId: string;
    /** The session a successful attempt opened. */
    sessionId?: string;
    now: Date;
    method: string;
    outcome: 'succeeded' | 'refused';
    ip: string | null;
    userAgent: string | null;
  },
): Promise<void> {
  // Written through the identity's row: keyed by NOBODY it writes nothing, in the same statement.
  // An erased identity keeps no address or user agent, so nothing is recorded against it; FOR KEY
  // SHARE waits for an erasure in flight (which holds the row FOR UPDATE) and re-reads the row.
  await sql`
    INSERT INTO sign_in_attempts (id, identity_id, session_id, occurred_at, method, outcome, ip_address, user_agent)
    SELECT ${a.id ?? randomUUID()}, id, ${a.sessionId ?? null}, ${a.now}, ${a.method}, ${a.outcome}, ${a.ip}, ${a.userAgent}
    FROM identities WHERE id = ${a.identityId} AND erased_at IS NULL FOR KEY SHARE`.execute(trx);
}

/** Withdraws a provisional refusal once the attempt it stood for succeeded. */
export async function withdrawAttempt(trx: Executor, id: string): Promise<void> {
  await sql`DELETE FROM sign_in_attempts WHERE id = ${id}`.execute(trx);
}

/** Newest first with the id as unique tiebreak. */
export async function attemptsPage(
  trx: Executor,
  identityId: string,
  window: KeysetWindow,
): Promise<AttemptRow[]> {
  const r = await sql<AttemptRow>`
    SELECT id, occurred_at, method, outcome, ip_address, user_agent, notice_sent_at FROM sign_in_attempts
    WHERE identity_id = ${identityId} AND ${afterPosition('occurred_at', window)}
    ${newestFirst('occurred_at', window)}`.execute(trx);
  return r.rows;
}

export interface LiveSessionRow {
  id: string;
  created_at: Date;
  last_active_at: Date;
  expires_at: Date;
  method: string;
  ip_address: string | null;
  user_agent: string | null;
}

/**
 * The identity's live sessions (the guard's rule: not revoked, not expired, on the identity's
 * epoch), newest first with the id as tiebreak. Last active is the last renewal, else the sign-in.
 */
export async function liveSessionsPage(
  trx: Executor,
  identityId: string,
  now: Date,
  window: KeysetWindow,
): Promise<LiveSessionRow[]> {
  const r = await sql<LiveSessionRow>`
    SELECT s.id, s.created_at, coalesce(s.renewed_at, s.created_at) AS last_active_at, s.expires_at, s.method,
           s.ip_address, s.user_agent
    FROM sessions s JOIN identities i ON i.id = s.identity_id
    WHERE s.identity_id = ${identityId} AND s.revoked_at IS NULL AND s.expires_at > ${now}
      AND s.epoch = i.session_epoch AND ${afterPosition('s.created_at', window, 's.id')}
    ${newestFirst('s.created_at', window, 's.id')}`.execute(trx);
  return r.rows;
}

/**
 * Compare-and-set: ends one live session of this identity (owner's revocation). False for an id
 * that names nothing live of this identity: unknown, another identity's, already ended, expired,
 * or dead by an epoch move; the caller answers all of them alike.
 */
export function revokeOwnSession(
  trx: Executor,
  sessionId: string,
  identityId: string,
  reason: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE sessions s SET revoked_at = ${now}, revoked_reason = ${reason}
    FROM identities i
    WHERE s.id = ${sessionId} AND s.identity_id = ${identityId} AND i.id = s.identity_id
      AND s.revoked_at IS NULL AND s.expires_at > ${now} AND s.epoch = i.session_epoch
    RETURNING s.id`,
  );
}

/**
 * The distinct places (address, user agent) the identity signed in from successfully, other than
 * the session `except`, each with when it was last used, most recent first.
 */
export async function signInOrigins(
  trx: Executor,
  identityId: string,
  except: string,
  limit: number,
): Promise<{ ip_address: string | null; user_agent: string | null; last_at: Date }[]> {
  const r = await sql<{ ip_address: string | null; user_agent: string | null; last_at: Date }>`
    SELECT ip_address, user_agent, max(occurred_at) AS last_at FROM sign_in_attempts
    WHERE identity_id = ${identityId} AND outcome = 'succeeded' AND session_id IS DISTINCT FROM ${except}::uuid
    GROUP BY ip_address, user_agent
    ORDER BY last_at DESC LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/** Records on the sign-in's history entry that a new-sign-in notice went out. */
export async function markNoticeSent(trx: Executor, sessionId: string, now: Date): Promise<void> {
  await sql`UPDATE sign_in_attempts SET notice_sent_at = ${now} WHERE session_id = ${sessionId}`.execute(trx);
}

// Any fixed number distinct from the migration lock: instances racing to create the first key.
const KEY_CREATION_LOCK = 727_011_002;

/** Serialises key creation across instances until the transaction ends. */
export async function lockKeyCreation(trx: Executor): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${KEY_CREATION_LOCK})`.execute(trx);
}

export async function liveSigningKeys(trx: Executor): Promise<{ kid: string; sealed_private_jwk: string }[]> {
  const r = await sql<{ kid: string; sealed_private_jwk: string }>`
    SELECT kid, sealed_private_jwk FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at, kid`.execute(
    trx,
  );
  return r.rows;
}

export async function insertSigningKey(
  trx: Executor,
  k: { kid: string; sealedPrivateJwk: string; publicJwk: Record<string, unknown>; now: Date },
): Promise<void> {
  await sql`
    INSERT INTO signing_keys (kid, sealed_private_jwk, public_jwk, created_at)
    VALUES (${k.kid}, ${k.sealedPrivateJwk}, ${JSON.stringify(k.publicJwk)}::jsonb, ${k.now})`.execute(trx);
}

/** Erasure (after its sessions were ended): no session of the identity keeps where it came from. */
export async function eraseSessionOrigins(trx: Executor, identityId: string): Promise<void> {
  await sql`
    UPDATE sessions SET ip_address = NULL, user_agent = NULL
    WHERE identity_id = ${identityId} AND (ip_address IS NOT NULL OR user_agent IS NOT NULL)`.execute(trx);
}

/** Erasure: the identity's sign-in history keeps its instants and outcomes, not its addresses. */
export async function eraseAttemptOrigins(trx: Executor, identityId: string): Promise<void> {
  await sql`
    UPDATE sign_in_attempts SET ip_address = NULL, user_agent = NULL
    WHERE identity_id = ${identityId} AND (ip_address IS NOT NULL OR user_agent IS NOT NULL)`.execute(trx);
}
