import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';

export interface RecoveryChallengeRow {
  id: string;
  identity_id: string;
  code_hash: string;
}

export async function setPassword(
  trx: Executor,
  identityId: string,
  passwordHash: string,
  now: Date,
): Promise<void> {
  await sql`
    UPDATE identities SET password_hash = ${passwordHash}, password_changed_at = ${now}
    WHERE id = ${identityId}`.execute(trx);
}

export async function insertRecoveryChallenge(
  trx: Executor,
  c: {
    id: string;
    identityId: string;
    identifierId: string;
    codeHash: string;
    maxAttempts: number;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO challenges
      (id, identity_id, identifier_id, purpose, code_hash, attempts, max_attempts, created_at, expires_at)
    VALUES
      (${c.id}, ${c.identityId}, ${c.identifierId}, 'password_recovery', ${c.codeHash}, 0, ${c.maxAttempts},
       ${c.now}, ${c.expiresAt})`.execute(trx);
}

/** Recovery challenges sent to this identifier that could still be answered at `now`. */
export async function liveRecoveryChallenges(
  trx: Executor,
  identifierId: string,
  now: Date,
): Promise<RecoveryChallengeRow[]> {
  const r = await sql<RecoveryChallengeRow>`
    SELECT id, identity_id, code_hash FROM challenges
    WHERE identifier_id = ${identifierId} AND purpose = 'password_recovery'
      AND spent_at IS NULL AND revoked_at IS NULL
      AND expires_at > ${now} AND attempts < max_attempts
    ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

/** A wrong code costs one attempt on every live recovery challenge of the identifier. */
export async function chargeLiveRecoveryChallenges(
  trx: Executor,
  identifierId: string,
  now: Date,
): Promise<number> {
  const r = await sql<{ id: string }>`
    UPDATE challenges SET attempts = attempts + 1
    WHERE identifier_id = ${identifierId} AND purpose = 'password_recovery'
      AND spent_at IS NULL AND revoked_at IS NULL
      AND expires_at > ${now} AND attempts < max_attempts
    RETURNING id`.execute(trx);
  return r.rows.length;
}

/** After a recovery, every other recovery code of the identity is dead. */
export async function revokeRecoveryChallenges(trx: Executor, identityId: string, now: Date): Promise<void> {
  await sql`
    UPDATE challenges SET revoked_at = ${now}
    WHERE identity_id = ${identityId} AND purpose = 'password_recovery'
      AND spent_at IS NULL AND revoked_at IS NULL`.execute(trx);
}
