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

/** Erasure: every elevation of the identity. */
export async function deleteIdentityElevations(trx: Executor, identityId: string): Promise<void> {
  await sql`DELETE FROM elevations WHERE identity_id = ${identityId}`.execute(trx);
}
