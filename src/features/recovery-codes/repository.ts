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

/** The live imported codes of an identity (their source hashes), for a code no keyed hash matched. */
export async function liveImportedCodes(
  trx: Executor,
  identityId: string,
): Promise<{ id: string; codeHash: string }[]> {
  return trx
    .selectFrom('recovery_codes')
    .select(['id', 'code_hash as codeHash'])
    .where('identity_id', '=', identityId)
    .where('imported', '=', true)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** Compare-and-set on one imported code: of two uses at once, one updates the row, the other none. */
export async function useImportedCode(trx: Executor, id: string, now: Date): Promise<boolean> {
  const r = await trx
    .updateTable('recovery_codes')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return r.length > 0;
}

/** An import's codes, one batch per identity, stored with their source hashes. */
export async function insertImportedCodes(
  trx: Executor,
  rows: { identityId: string; batchId: string; codeHash: string; now: Date }[],
): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('recovery_codes')
    .values((eb) =>
      rows.map((r) => ({
        id: eb.fn<string>('gen_random_uuid'),
        identity_id: r.identityId,
        batch_id: r.batchId,
        code_hash: r.codeHash,
        issued_at: r.now,
        imported: true,
      })),
    )
    .execute();
}

/** Live imported codes of the identities, in their source hash form (the export). */
export async function importedCodesForExport(trx: Executor, identityIds: string[]) {
  if (identityIds.length === 0) return [];
  return trx
    .selectFrom('recovery_codes')
    .select(['identity_id as identityId', 'code_hash as codeHash'])
    .where('identity_id', 'in', identityIds)
    .where('imported', '=', true)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** Erasure: every recovery code of the identity, used or not. */
export async function deleteIdentityCodes(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('recovery_codes').where('identity_id', '=', identityId).execute();
}
