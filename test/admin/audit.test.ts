import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_BATCH } from '../../src/features/admin/service.js';
import type { VerifiedRecord } from '../../src/platform/audit/audit.js';
import { ADMIN_KEY_NAME, adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';

type Item = VerifiedRecord;

let t: TestApp;
let a: Person;
let b: Person;
const get = (url: string) => adminRequest(t.admin!, 'GET', url);
const act = (p: Person, what: string) =>
  adminRequest(t.admin!, 'POST', `/identities/${p.identityId}/${what}`);

/** Every item of the paged list, following nextCursor. */
async function allPages(query: string, limit: number): Promise<Item[]> {
  const items: Item[] = [];
  let after: string | null = null;
  do {
    const r = await get(
      `/audit-records?limit=${limit}${query}${after ? `&after=${encodeURIComponent(after)}` : ''}`,
    );
    expect(r.statusCode, r.body).toBe(200);
    items.push(...r.json().data);
    after = r.json().meta.pageInfo.nextCursor;
  } while (after);
  return items;
}

/** The records of acts, without the operators' reads (of the trail, of identities) the tests add. */
const acts = (items: Item[]) =>
  items.filter((i) => i.name !== 'admin.audit.read' && i.name !== 'admin.identity.read');
/** The seq of the record naming b as its actor (second test). */
let bActs = 0;

function ndjson(body: string): Item[] {
  expect(body.endsWith('\n') || body === '').toBe(true);
  return body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Item);
}

beforeAll(async () => {
  t = await createTestApp({ admin: true });
  a = await createPerson(t.ctx);
  b = await createPerson(t.ctx);
  // a: 4 records, b: 2, interleaved.
  for (const [p, what] of [
    [a, 'disablements'],
    [b, 'lock-clearances'],
    [a, 'enablements'],
    [a, 'lock-clearances'],
    [b, 'session-revocations'],
    [a, 'session-revocations'],
  ] as const) {
    expect((await act(p, what)).statusCode).toBe(204);
    t.clock.advance(1);
  }
});
afterAll(() => t.close());

describe('GET /admin/v1/audit-records', () => {
  // Each page read appends its admin.audit.read record after it is read, above the records a keyset
  // page walks down through: the walks below see only the acts.
  it('pages newest first by seq, each record verified, filtered by identity', async () => {
    const all = await allPages('', 2);
    expect(all.map((i) => i.seq)).toEqual([6, 5, 4, 3, 2, 1]);
    expect(all.every((i) => i.verified)).toBe(true);
    expect(all[0]).toEqual({
      seq: 6,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      occurredAt: '2026-03-01T12:00:05.000Z',
      name: 'identity.sessions.ended_by_operator',
      actor: `admin:${ADMIN_KEY_NAME}`,
      target: a.identityId,
      outcome: 'success',
      details: { sessionsEnded: 0 },
      verified: true,
    });
    const ofA = await allPages(`&identityId=${a.identityId}`, 3);
    expect(ofA.map((i) => i.name)).toEqual([
      'identity.sessions.ended_by_operator',
      'identity.account.lock_cleared',
      'identity.enabled',
      'identity.disabled',
    ]);
    const ofB = await allPages(`&identityId=${b.identityId.toUpperCase()}`, 1);
    expect(ofB.map((i) => i.seq)).toEqual([5, 2]);
    expect((await get(`/audit-records?identityId=${randomUUID()}`)).json().data).toEqual([]);
  });

  it('finds records naming the identity as actor too', async () => {
    ({ seq: bActs } = await t.ctx.database.db.transaction().execute((trx) =>
      t.ctx.audit.append(trx, {
        name: 'identity.sessions.revoked_everywhere',
        actor: b.identityId,
        target: null,
        outcome: 'success',
      }),
    ));
    const ofB = await allPages(`&identityId=${b.identityId}`, 10);
    expect(acts(ofB).map((i) => i.seq)).toEqual([bActs, 5, 2]);
    // The reads of b's trail above name b as their target, so they are b's records too.
    expect(ofB.filter((i) => i.name === 'admin.audit.read').length).toBeGreaterThanOrEqual(2);
  });

  it('refuses bad queries and cursors', async () => {
    for (const q of ['identityId=x', 'limit=0', 'bogus=1', 'afterSeq=1', 'after=']) {
      const r = await get(`/audit-records?${q}`);
      expect(r.statusCode, q).toBe(400);
      expect(r.json().code).toBe('validation.failed');
    }
    const cursor: string = (await get('/audit-records?limit=1')).json().meta.pageInfo.nextCursor;
    const [v, k, body, mac] = cursor.split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    payload.p.seq = 1000;
    const forged = [v, k, Buffer.from(JSON.stringify(payload)).toString('base64url'), mac].join('.');
    const r = await get(`/audit-records?after=${encodeURIComponent(forged)}`);
    expect(r.statusCode).toBe(400);
    expect(r.json().code).toBe('collection.cursor_tampered');
    // A signed cursor of another list (identities) is refused, not read as a seq.
    const other = (await get('/identities?limit=1')).json().meta.pageInfo.nextCursor;
    expect((await get(`/audit-records?after=${encodeURIComponent(other)}`)).json().code).toBe(
      'collection.cursor_invalid',
    );
  });

  it('a record changed behind the chain is shown unverified; the records around it still verify', async () => {
    const t2 = await createTestApp({ admin: true });
    try {
      const p = await createPerson(t2.ctx);
      for (const what of ['disablements', 'enablements', 'lock-clearances']) {
        expect(
          (await adminRequest(t2.admin!, 'POST', `/identities/${p.identityId}/${what}`)).statusCode,
        ).toBe(204);
      }
      await sql`UPDATE audit_records SET details = '{"changed":false}'::jsonb WHERE seq = 2`.execute(
        t2.ctx.database.db,
      );
      const page = (await adminRequest(t2.admin!, 'GET', '/audit-records')).json().data as Item[];
      expect(page.map((i) => [i.seq, i.verified])).toEqual([
        [3, true],
        [2, false],
        [1, true],
      ]);
      // 4 is the page's read record, sealed on the changed record's seal: it verifies.
      const stream = ndjson((await adminRequest(t2.admin!, 'GET', '/audit-records/stream')).body);
      expect(stream.map((i) => [i.seq, i.name, i.verified])).toEqual([
        [1, 'identity.disabled', true],
        [2, 'identity.enabled', false],
        [3, 'identity.account.lock_cleared', true],
        [4, 'admin.audit.read', true],
      ]);
      // A record whose predecessor was deleted cannot be verified either (5 is the stream's read).
      await sql`DELETE FROM audit_records WHERE seq = 1`.execute(t2.ctx.database.db);
      const after = (await adminRequest(t2.admin!, 'GET', '/audit-records')).json().data as Item[];
      expect(after.map((i) => [i.seq, i.verified])).toEqual([
        [5, true],
        [4, true],
        [3, true],
        [2, false],
      ]);
    } finally {
      await t2.close();
    }
  });
});

describe('GET /admin/v1/audit-records/stream', () => {
  it('streams NDJSON oldest first, filtered and from a seq', async () => {
    const r = await get('/audit-records/stream');
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(r.headers['cache-control']).toBe('no-store');
    const all = ndjson(r.body);
    // Every seq up to the stream's own read record, which comes next and is not in it.
    const last = all[all.length - 1].seq;
    expect(all.map((i) => i.seq)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(acts(all).map((i) => i.seq)).toEqual([1, 2, 3, 4, 5, 6, bActs]);
    expect(all.every((i) => i.verified)).toBe(true);
    const paged = await allPages('', 100);
    expect(all).toEqual(paged.filter((i) => i.seq <= last).reverse());
    expect(paged.find((i) => i.seq === last + 1)).toMatchObject({
      name: 'admin.audit.read',
      details: { view: 'stream', afterSeq: 0 },
    });
    expect(
      acts(ndjson((await get(`/audit-records/stream?identityId=${a.identityId}`)).body)).map((i) => i.seq),
    ).toEqual([1, 3, 4, 6]);
    expect(acts(ndjson((await get('/audit-records/stream?afterSeq=5')).body)).map((i) => i.seq)).toEqual([
      6,
      bActs,
    ]);
    expect((await get('/audit-records/stream?afterSeq=1000000')).body).toBe('');
    for (const q of ['afterSeq=-1', 'afterSeq=x', 'identityId=nope', 'limit=5']) {
      const bad = await get(`/audit-records/stream?${q}`);
      expect(bad.statusCode, q).toBe(400);
    }
  });

  it('reads past one batch without losing or repeating a record', async () => {
    const t3 = await createTestApp({ admin: true });
    try {
      const count = STREAM_BATCH * 2 + 7;
      await t3.ctx.database.db.transaction().execute(async (trx) => {
        for (let i = 0; i < count; i++) {
          await t3.ctx.audit.append(trx, {
            name: 'test.event',
            actor: null,
            target: null,
            outcome: 'success',
            details: { i },
          });
        }
      });
      const items = ndjson((await adminRequest(t3.admin!, 'GET', '/audit-records/stream')).body);
      expect(items.map((i) => i.seq)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      expect(items.every((i) => i.verified)).toBe(true);
    } finally {
      await t3.close();
    }
  });
});
