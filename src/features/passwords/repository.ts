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

/** After a recovery, every other recovery code of the identity is dead. */
export async function revokeRecoveryChallenges(trx: Executor, identityId: string, now: Date): Promise<void> {
  await sql`
    UPDATE challenges SET revoked_at = ${now}
    WHERE identity_id = ${identityId} AND purpose = 'password_recovery'
      AND spent_at IS NULL AND revoked_at IS NULL`.execute(trx);
}
