import type { Executor } from '../db/database.js';

/** The one row of `key_checks` (id 1): the key check the database was first started with. */
export async function readKeyCheck(trx: Executor): Promise<string | undefined> {
  const row = await trx.selectFrom('key_checks').select('key_check').where('id', '=', 1).executeTakeFirst();
  return row?.key_check;
}

/**
 * Stores the key check unless one is stored already: two instances starting at once race on the
 * one row and the first wins (ON CONFLICT DO NOTHING); each then reads back the row that won.
 */
export async function insertKeyCheck(trx: Executor, keyCheck: string, at: Date): Promise<void> {
  await trx
    .insertInto('key_checks')
    .values({ id: 1, key_check: keyCheck, created_at: at })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}
