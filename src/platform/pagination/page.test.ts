import { Value } from '@sinclair/typebox/value';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { Problem } from '../problem.js';
import { CursorCodec, type CursorScope } from './cursor.js';
import {
  buildPage,
  type KeysetWindow,
  keysetPage,
  PageInfoSchema,
  PageQuerySchema,
  readPageQuery,
} from './page.js';

interface Row {
  t: string;
  id: string;
}

const SCOPE: CursorScope = { route: 'GET /api/v1/second-factors', subject: 'identity-1' };

function setup() {
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  const codec = new CursorCodec({ id: 'k1', secret: Buffer.alloc(32, 3) }, clock);
  return { clock, codec };
}

const positionOf = (r: Row) => ({ t: r.t, id: r.id });

/** (t DESC, id DESC) — plain code-unit comparison, as a C-collated index would order them. */
function compareDesc(a: Row, b: Row): number {
  if (a.t !== b.t) return a.t < b.t ? 1 : -1;
  if (a.id !== b.id) return a.id < b.id ? 1 : -1;
  return 0;
}

/** In-memory stand-in for `WHERE (t, id) < ($t, $id) ORDER BY t DESC, id DESC LIMIT limit + 1`. */
function fetchRows(table: Row[], limit: number, after: Record<string, string | number> | null): Row[] {
  const sorted = [...table].sort(compareDesc);
  const filtered = after
    ? sorted.filter((r) => r.t < String(after.t) || (r.t === String(after.t) && r.id < String(after.id)))
    : sorted;
  return filtered.slice(0, limit + 1);
}

/** Walks every page the way a client would, returning the pages' items. */
function walk(table: Row[], limit: number, codec: CursorCodec): Row[][] {
  const pages: Row[][] = [];
  let after: string | undefined;
  for (let guard = 0; guard < table.length + 2; guard++) {
    const request = readPageQuery({ limit, after }, codec, SCOPE);
    const page = buildPage(
      fetchRows(table, request.limit, request.after),
      request.limit,
      positionOf,
      codec,
      SCOPE,
      900,
    );
    pages.push(page.items);
    if (!page.pageInfo.hasNextPage) return pages;
    expect(page.pageInfo.nextCursor).not.toBeNull();
    after = page.pageInfo.nextCursor ?? undefined;
  }
  throw new Error('walk did not terminate');
}

describe('buildPage', () => {
  const rows: Row[] = [
    { t: '2026-01-03T00:00:00.000Z', id: 'c' },
    { t: '2026-01-02T00:00:00.000Z', id: 'b' },
    { t: '2026-01-01T00:00:00.000Z', id: 'a' },
  ];

  it('fewer rows than limit+1: all rows, no next page, null cursor', () => {
    const { codec } = setup();
    const page = buildPage(rows, 3, positionOf, codec, SCOPE, 900);
    expect(page.items).toEqual(rows);
    expect(page.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
  });

  it('an empty result is an empty last page', () => {
    const { codec } = setup();
    expect(buildPage([], 10, positionOf, codec, SCOPE, 900)).toEqual({
      items: [],
      pageInfo: { hasNextPage: false, nextCursor: null },
    });
  });

  it('limit+1 rows: drops the probe row and points the cursor at the last returned item', () => {
    const { codec } = setup();
    const page = buildPage(rows, 2, positionOf, codec, SCOPE, 900);
    expect(page.items).toEqual(rows.slice(0, 2));
    expect(page.pageInfo.hasNextPage).toBe(true);
    expect(codec.decode(SCOPE, page.pageInfo.nextCursor as string)).toEqual(positionOf(rows[1]));
  });

  it('does not mutate the input rows', () => {
    const { codec } = setup();
    const input = [...rows];
    buildPage(input, 2, positionOf, codec, SCOPE, 900);
    expect(input).toEqual(rows);
  });

  it('binds the next cursor to the scope and the requested ttl', () => {
    const { codec, clock } = setup();
    const cursor = buildPage(rows.slice(0, 2), 1, positionOf, codec, SCOPE, 30).pageInfo.nextCursor as string;
    expect(() => codec.decode({ ...SCOPE, subject: 'identity-2' }, cursor)).toThrow(Problem);
    clock.advance(29);
    expect(codec.decode(SCOPE, cursor)).toEqual(positionOf(rows[0]));
    clock.advance(1);
    expect(() => codec.decode(SCOPE, cursor)).toThrowError(
      expect.objectContaining({ code: 'collection.cursor_expired' }),
    );
  });

  it('refuses more than limit+1 rows (a query without the probe-row LIMIT)', () => {
    const { codec } = setup();
    expect(() => buildPage(rows, 1, positionOf, codec, SCOPE, 900)).toThrow(RangeError);
  });
});

describe('keyset walk', () => {
  it('visits every row exactly once, in order, when many rows share a timestamp', () => {
    const { codec } = setup();
    const same = '2026-02-01T10:00:00.000Z';
    const table: Row[] = [
      { t: same, id: '0003' },
      { t: '2026-02-02T00:00:00.000Z', id: '0009' },
      { t: same, id: '0001' },
      { t: same, id: '0007' },
      { t: same, id: '0002' },
      { t: '2026-01-01T00:00:00.000Z', id: '0008' },
      { t: same, id: '0005' },
    ];
    const pages = walk(table, 2, codec);
    expect(pages.map((p) => p.map((r) => r.id))).toEqual([
      ['0009', '0007'],
      ['0005', '0003'],
      ['0002', '0001'],
      ['0008'],
    ]);
  });

  it('ends without an empty trailing page when the rows divide evenly into pages', () => {
    const { codec } = setup();
    const table: Row[] = Array.from({ length: 6 }, (_, i) => ({
      t: '2026-02-01T10:00:00.000Z',
      id: `id-${i}`,
    }));
    const pages = walk(table, 3, codec);
    expect(pages.map((p) => p.length)).toEqual([3, 3]);
  });

  it('property: any table, any limit — every row exactly once, in (t DESC, id DESC) order', () => {
    const { codec } = setup();
    const rowArb = fc.record({
      t: fc.constantFrom('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', '2026-01-02T00:00:00.000Z'),
      id: fc.uuid(),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(rowArb, { selector: (r) => r.id, maxLength: 40 }),
        fc.integer({ min: 1, max: 7 }),
        (table, limit) => {
          const pages = walk(table, limit, codec);
          const seen = pages.flat();
          expect(seen).toEqual([...table].sort(compareDesc));
          expect(new Set(seen.map((r) => r.id)).size).toBe(table.length);
          for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('readPageQuery', () => {
  it('applies the defaults: limit 50, cursorTtl 900, first page', () => {
    const { codec } = setup();
    expect(readPageQuery({}, codec, SCOPE)).toEqual({ limit: 50, cursorTtl: 900, after: null });
  });

  it('decodes after against the scope', () => {
    const { codec } = setup();
    const after = codec.encode(SCOPE, { t: 'x', id: 'y' }, 60);
    expect(readPageQuery({ limit: 5, cursorTtl: 86_400, after }, codec, SCOPE)).toEqual({
      limit: 5,
      cursorTtl: 86_400,
      after: { t: 'x', id: 'y' },
    });
  });

  it('propagates the cursor Problem for a cursor from another route', () => {
    const { codec } = setup();
    const after = codec.encode({ ...SCOPE, route: 'GET /elsewhere' }, { t: 'x', id: 'y' }, 60);
    expect(() => readPageQuery({ after }, codec, SCOPE)).toThrowError(
      expect.objectContaining({ code: 'collection.cursor_invalid' }),
    );
  });

  it.each([{ limit: 0 }, { limit: 101 }, { cursorTtl: 0 }, { cursorTtl: 86_401 }])('refuses %o', (query) => {
    const { codec } = setup();
    expect(() => readPageQuery(query, codec, SCOPE)).toThrow(RangeError);
  });
});

describe('PageQuerySchema', () => {
  it.each([
    [{}, true],
    [{ limit: 1 }, true],
    [{ limit: 100 }, true],
    [{ limit: 0 }, false],
    [{ limit: 101 }, false],
    [{ limit: 1.5 }, false],
    [{ after: 'x' }, true],
    [{ after: '' }, false],
    [{ after: 'x'.repeat(2048) }, true],
    [{ after: 'x'.repeat(2049) }, false],
    [{ cursorTtl: 1 }, true],
    [{ cursorTtl: 86_400 }, true],
    [{ cursorTtl: 0 }, false],
    [{ cursorTtl: 86_401 }, false],
    [{ offset: 10 }, false],
  ])('%o valid = %s', (query, valid) => {
    expect(Value.Check(PageQuerySchema, query)).toBe(valid);
  });

  it('carries the defaults limit 50 and cursorTtl 900', () => {
    expect(Value.Default(PageQuerySchema, {})).toEqual({ limit: 50, cursorTtl: 900 });
  });
});

describe('PageInfoSchema', () => {
  it.each([
    [{ hasNextPage: true, nextCursor: 'abc' }, true],
    [{ hasNextPage: false, nextCursor: null }, true],
    [{ hasNextPage: false }, false],
    [{ hasNextPage: 'no', nextCursor: null }, false],
    [{ hasNextPage: false, nextCursor: 1 }, false],
  ])('%o valid = %s', (info, valid) => {
    expect(Value.Check(PageInfoSchema, info)).toBe(valid);
  });
});

describe('keysetPage', () => {
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  const codec = new CursorCodec({ id: 'k1', secret: Buffer.alloc(32, 7) }, clock);
  const scope: CursorScope = { route: 'GET /api/v1/things', subject: 'someone' };
  const rows = Array.from({ length: 5 }, (_, i) => ({
    id: `00000000-0000-4000-8000-00000000000${i}`,
    at: new Date(Date.UTC(2026, 1, 1, 0, 0, 5 - i)),
  }));
  const fetch = async ({ limit, after }: KeysetWindow) =>
    rows
      .filter(
        (r) =>
          !after ||
          r.at.getTime() < Date.parse(after.t) ||
          (r.at.toISOString() === after.t && r.id < after.id),
      )
      .slice(0, limit + 1);

  it('walks every row once, newest first, through its own cursors', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await keysetPage(
        codec,
        scope,
        { limit: 2, after },
        fetch,
        (r) => r.at,
        (r) => r.id,
      );
      seen.push(...page.items.map((r) => r.id));
      after = page.pageInfo.nextCursor ?? undefined;
    } while (after);
    expect(seen).toEqual(rows.map((r) => r.id));
  });

  it('refuses a signed cursor whose position is not an (instant, uuid) pair before fetching', async () => {
    let fetched = false;
    for (const position of [
      { t: 'not a date', id: rows[0].id },
      { t: rows[0].at.toISOString(), id: "1' OR 1=1" },
      { t: 5, id: rows[0].id },
    ]) {
      const cursor = codec.encode(scope, position, 900);
      await expect(
        keysetPage(
          codec,
          scope,
          { after: cursor },
          async () => {
            fetched = true;
            return [];
          },
          (r: { at: Date }) => r.at,
          () => '',
        ),
      ).rejects.toMatchObject({ code: 'collection.cursor_invalid' });
    }
    expect(fetched).toBe(false);
  });
});
