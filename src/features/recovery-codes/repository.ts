import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';

/** A new batch replaces the live one; codes already used keep their used state. */
export async function revokeLiveCodes(trx: Executor, identityId: string, now: Date): Promise<void> {
  await sql`
    UPDATE recovery_codes SET revoked_at = ${now}
    WHERE identity_id = ${identityId} AND used_at IS NULL AND revoked_at IS NULL`.execute(trx);
}

export async function insertBatch(
  trx: Executor,
  b: { identityId: string; batchId: string; codeHashes: string[]; now: Date },
): Promise<void> {
  const rows = b.codeHashes.map(
    (hash) => sql`(gen_random_uuid(), ${b.identityId}, ${b.batchId}, ${hash}, ${b.now})`,
  );
  await sql`
    INSERT INTO recovery_codes (id, identity_id, batch_id, code_hash, issued_at)
    VALUES ${sql.join(rows)}`.execute(trx);
}

export async function liveStatus(
  trx: Executor,
  identityId: string,
): Promise<{ remaining: number; issued_at: Date | null }> {
  const r = await sql<{ remaining: number; issued_at: Date | null }>`
    SELECT count(*)::int AS remaining, max(issued_at) AS issued_at FROM recovery_codes
    WHERE identity_id = ${identityId} AND used_at IS NULL AND revoked_at IS NULL`.execute(trx);
  return r.rows[0] ?? { remaining: 0, issued_at: null };
}

/**
 * Compare-and-set: spends a live code of this identity. Of two sign-ins racing with one code,
 * the second waits on the row lock, re-checks used_at and gets false.
 */
export async function useCode(
  trx: Executor,
  identityId: string,
  codeHash: string,
  now: Date,
): Promise<boolean> {
  const r = await sql`
    UPDATE recovery_codes SET used_at = ${now}
    WHERE identity_id = ${identityId} AND code_hash = ${codeHash} AND used_at IS NULL AND revoked_at IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length > 0;
}

/** Erasure: every recovery code of the identity, used or not. */
export async function deleteIdentityCodes(trx: Executor, identityId: string): Promise<void> {
  await sql`DELETE FROM recovery_codes WHERE identity_id = ${identityId}`.execute(trx);
}
