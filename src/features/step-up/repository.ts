import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';

export interface ElevationRow {
  identity_id: string;
  session_id: string;
  expires_at: Date;
  session_revoked_at: Date | null;
}

export async function insertElevation(
  trx: Executor,
  e: { tokenHash: string; identityId: string; sessionId: string; now: Date; expiresAt: Date },
): Promise<void> {
  await sql`
    INSERT INTO elevations (token_hash, identity_id, session_id, created_at, expires_at)
    VALUES (${e.tokenHash}, ${e.identityId}, ${e.sessionId}, ${e.now}, ${e.expiresAt})`.execute(trx);
}

/** The guard's read: one primary-key lookup joined to the session it is bound to. */
export async function findElevation(trx: Executor, tokenHash: string): Promise<ElevationRow | undefined> {
  const r = await sql<ElevationRow>`
    SELECT e.identity_id, e.session_id, e.expires_at, s.revoked_at AS session_revoked_at
    FROM elevations e JOIN sessions s ON s.id = e.session_id
    WHERE e.token_hash = ${tokenHash}`.execute(trx);
  return r.rows[0];
}

export interface StepUpChallengeRow {
  id: string;
  identity_id: string;
  session_id: string;
  channel: 'second_factor' | 'identifier';
  code_hash: string | null;
  attempts: number;
  max_attempts: number;
  expires_at: Date;
  spent_at: Date | null;
  revoked_at: Date | null;
}

/** Only the newest step-up of a session can be answered: starting one retires the earlier ones. */
export async function revokeLiveChallenges(trx: Executor, sessionId: string, now: Date): Promise<void> {
  await sql`
    UPDATE step_up_challenges SET revoked_at = ${now}
    WHERE session_id = ${sessionId} AND spent_at IS NULL AND revoked_at IS NULL`.execute(trx);
}

export async function insertChallenge(
  trx: Executor,
  c: {
    id: string;
    identityId: string;
    sessionId: string;
    channel: 'second_factor' | 'identifier';
    identifierId: string | null;
    codeHash: string | null;
    maxAttempts: number;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO step_up_challenges
      (id, identity_id, session_id, channel, identifier_id, code_hash, attempts, max_attempts, created_at, expires_at)
    VALUES
      (${c.id}, ${c.identityId}, ${c.sessionId}, ${c.channel}, ${c.identifierId}, ${c.codeHash}, 0,
       ${c.maxAttempts}, ${c.now}, ${c.expiresAt})`.execute(trx);
}

/** Row lock: concurrent answers to one challenge are decided one after the other. */
export async function lockChallenge(trx: Executor, id: string): Promise<StepUpChallengeRow | undefined> {
  const r = await sql<StepUpChallengeRow>`
    SELECT id, identity_id, session_id, channel, code_hash, attempts, max_attempts, expires_at, spent_at, revoked_at
    FROM step_up_challenges WHERE id = ${id} FOR UPDATE`.execute(trx);
  return r.rows[0];
}

/** Compare-and-set: spends the challenge only while it is still answerable at `now`. */
export async function spendChallenge(trx: Executor, id: string, now: Date): Promise<boolean> {
  const r = await sql`
    UPDATE step_up_challenges SET spent_at = ${now}
    WHERE id = ${id} AND spent_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
      AND attempts < max_attempts
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

export async function chargeChallenge(trx: Executor, id: string): Promise<number> {
  const r = await sql<{ attempts: number }>`
    UPDATE step_up_challenges SET attempts = attempts + 1 WHERE id = ${id} RETURNING attempts`.execute(trx);
  return r.rows[0]?.attempts ?? 0;
}
