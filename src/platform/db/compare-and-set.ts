import type { RawBuilder } from 'kysely';
import type { Executor } from './database.js';

/**
 * Runs a compare-and-set: an `UPDATE … WHERE <expected state> RETURNING id` (or an insert that
 * yields to a unique index). True when it changed exactly one row, so of two requests racing for
 * one row exactly one sees true (docs/architecture.md, "The request path"; tested in test/races/).
 */
export async function changedOne(trx: Executor, statement: RawBuilder<unknown>): Promise<boolean> {
  const r = await statement.execute(trx);
  return r.rows.length === 1;
}
