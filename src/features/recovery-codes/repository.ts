import type { Executor } from '../../platform/db/database.js';

export interface LiveCodes {
  remaining: number;
  issuedAt: Date | null;
}

/** A new batch replaces the live one; codes already used keep their used state. */
export async function revokeLiveCodes(trx: Executor, identityId: string, now: Date): Promise<void> {
  await trx
    .updateTable('recovery_codes')
    .set({ revoked_at: now })
    .where('identity_id', '=', identityId)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function insertBatch(
  trx: Executor,
  b: { identityId: string; batchId: string; codeHashes: string[]; now: Date },
): Promise<void> {
  await trx
    .insertInto('recovery_codes')
    .values((eb) =>
      b.codeHashes.map((hash) => ({
        id: eb.fn<string>('gen_random_uuid'),
        identity_id: b.identityId,
        batch_id: b.batchId,
        code_hash: hash,
        issued_at: b.now,
      })),
    )
    .execute();
}

export async function liveStatus(trx: Executor, identityId: string): Promise<LiveCodes> {
  const r = await trx
    .selectFrom('recovery_codes')
    .select((eb) => [
      eb.cast<number>(eb.fn.countAll(), 'integer').as('remaining'),
      eb.fn.max('issued_at').as('issuedAt'),
    ])
    .where('identity_id', '=', identityId)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return r ?? { remaining: 0, issuedAt: null };
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
  const r = await trx
    .updateTable('recovery_codes')
    .set({ used_at: now })
    .where('identity_id', '=', identityId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return r.length > 0;
}

/** Erasure: every recovery code of the identity, used or not. */
export async function deleteIdentityCodes(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('recovery_codes').where('identity_id', '=', identityId).execute();
}
