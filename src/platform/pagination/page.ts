import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Problem } from '../problem.js';
import {
  type CursorCodec,
  type CursorPosition,
  type CursorScope,
  DEFAULT_CURSOR_TTL_SECONDS,
  MAX_CURSOR_TTL_SECONDS,
} from './cursor.js';

/**
 * Keyset pagination. A list route takes exactly `limit`, `after` and `cursorTtl`; rows are ordered
 * (t DESC, id DESC) — newest first, with the unique id as tiebreak — and fetched with LIMIT limit + 1 so the
 * extra row tells whether another page exists without a count query.
 */

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 100;

export interface PageQuery {
  limit?: number;
  after?: string;
  cursorTtl?: number;
}

export const PageQuerySchema = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT })),
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    cursorTtl: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_CURSOR_TTL_SECONDS, default: DEFAULT_CURSOR_TTL_SECONDS }),
    ),
  },
  { additionalProperties: false },
);

export const PageInfoSchema = Type.Object(
  {
    hasNextPage: Type.Boolean(),
    nextCursor: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export type PageInfo = Static<typeof PageInfoSchema>;

/** The body of a list route: `data` holds the items, `meta.pageInfo` the way on. */
export function Page<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item), meta: Type.Object({ pageInfo: PageInfoSchema }) });
}

export interface PageRequest {
  limit: number;
  cursorTtl: number;
  /** Decoded position of `after`, or null for the first page. */
  after: CursorPosition | null;
}

/**
 * Applies defaults and decodes `after` against the route and caller.
 * Throws the codec's Problem (cursor_tampered / cursor_invalid / cursor_expired) for an unusable cursor.
 */
export function readPageQuery(query: PageQuery, codec: CursorCodec, scope: CursorScope): PageRequest {
  const limit = query.limit ?? DEFAULT_PAGE_LIMIT;
  const cursorTtl = query.cursorTtl ?? DEFAULT_CURSOR_TTL_SECONDS;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT)
    throw new RangeError('limit out of range');
  if (!Number.isInteger(cursorTtl) || cursorTtl < 1 || cursorTtl > MAX_CURSOR_TTL_SECONDS) {
    throw new RangeError('cursorTtl out of range');
  }
  const after = query.after === undefined ? null : codec.decode(scope, query.after);
  return { limit, cursorTtl, after };
}

/** Takes rows fetched with LIMIT limit+1 in the order (t DESC, id DESC) (newest first) and builds the page. */
export function buildPage<R>(
  rows: R[],
  limit: number,
  positionOf: (r: R) => Record<string, string | number>,
  codec: CursorCodec,
  scope: CursorScope,
  ttlSeconds: number,
): { items: R[]; pageInfo: { hasNextPage: boolean; nextCursor: string | null } } {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  if (rows.length > limit + 1) throw new RangeError('rows must be fetched with LIMIT limit + 1');
  const hasNextPage = rows.length > limit;
  const items = hasNextPage ? rows.slice(0, limit) : rows.slice();
  const nextCursor = hasNextPage
    ? codec.encode(scope, positionOf(items[items.length - 1]), ttlSeconds)
    : null;
  return { items, pageInfo: { hasNextPage, nextCursor } };
}

/** A keyset position: the sort instant and the row id that breaks ties. */
export interface KeysetPosition {
  t: string;
  id: string;
}

/** What a keyset page asks its repository for: `limit` rows (and one more) after `after`. */
export interface KeysetWindow {
  limit: number;
  /** The last row of the previous page; absent on the first page. */
  after?: KeysetPosition;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * One page of a list ordered by (instant DESC, id DESC): reads limit/after/cursorTtl, decodes the
 * cursor against the route and caller, asks `fetch` for limit + 1 rows after that position, and
 * builds the page. A signed cursor whose position is not an (instant, uuid) pair is refused as
 * unusable rather than reaching the SQL.
 */
export async function keysetPage<R>(
  codec: CursorCodec,
  scope: CursorScope,
  query: PageQuery,
  fetch: (window: KeysetWindow) => Promise<R[]>,
  positionOf: (row: R) => Date,
  idOf: (row: R) => string = (row) => (row as { id: string }).id,
): Promise<{ items: R[]; pageInfo: PageInfo }> {
  const req = readPageQuery(query, codec, scope);
  const after = req.after;
  if (
    after &&
    (typeof after.t !== 'string' ||
      Number.isNaN(Date.parse(after.t)) ||
      typeof after.id !== 'string' ||
      !UUID.test(after.id))
  ) {
    throw new Problem('collection.cursor_invalid');
  }
  const rows = await fetch({
    limit: req.limit,
    after: after ? { t: after.t as string, id: after.id as string } : undefined,
  });
  return buildPage(
    rows,
    req.limit,
    (r) => ({ t: new Date(positionOf(r)).toISOString(), id: idOf(r) }),
    codec,
    scope,
    req.cursorTtl,
  );
}
