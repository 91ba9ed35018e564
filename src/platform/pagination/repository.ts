import { type RawBuilder, sql } from 'kysely';
import type { KeysetPosition } from './page.js';

/**
 * The SQL of a keyset page ordered by (instant DESC, id DESC), shared by every list route: the
 * rows strictly after the previous page's last row (every row on the first page) ...
 */
export function afterPosition(
  instant: string,
  after: KeysetPosition | undefined,
  id = 'id',
): RawBuilder<unknown> {
  return after
    ? sql`(${sql.ref(instant)}, ${sql.ref(id)}) < (${new Date(after.t)}, ${after.id}::uuid)`
    : sql`TRUE`;
}

/** ... newest first with the id as unique tiebreak, one row past the page to tell whether more follow. */
export function newestFirst(instant: string, limit: number, id = 'id'): RawBuilder<unknown> {
  return sql`ORDER BY ${sql.ref(instant)} DESC, ${sql.ref(id)} DESC LIMIT ${limit + 1}`;
}
