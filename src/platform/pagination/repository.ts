import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { KeysetWindow } from './page.js';

/**
 * The SQL of a keyset page ordered by (instant DESC, id DESC), shared by every list route: the
 * rows strictly after the previous page's last row (every row on the first page). Each list orders
 * by (instant DESC, id DESC) and fetches rowsToFetch rows with the builder.
 */
// raw: one row-value comparison, (instant, id) < (t, id), over columns named by each list route as
// strings; the builder's refTuple needs each table's typed column names.
export function afterPosition(instant: string, { after }: KeysetWindow, id = 'id'): RawBuilder<SqlBool> {
  return after
    ? sql<SqlBool>`(${sql.ref(instant)}, ${sql.ref(id)}) < (${new Date(after.t)}, ${after.id}::uuid)`
    : sql<SqlBool>`TRUE`;
}

/** One row past the page, to tell whether more follow (for a query-builder select). */
export function rowsToFetch({ limit }: KeysetWindow): number {
  return limit + 1;
}
