import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventReader } from '../../src/features/events/operators/service.js';
import { admin, createEndpoint, deliveriesOf, type Sink, startSink, worker } from '../events/support.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { ROUNDS } from './support.js';

// Events and deliveries under concurrency, on the PostgreSQL server: two workers never send one
// delivery at once (FOR UPDATE SKIP LOCKED and a lease), and a cursor reader racing concurrent
// writers (some rolling back) and stampers sees every committed event exactly once, in seq order
// with no gap, and none that rolled back.
let t: TestApp;
let sink: Sink;

beforeAll(async () => {
  t = await createTestApp({ server: true, admin: true });
  sink = await startSink();
});
afterAll(async () => {
  await sink?.close();
  await t?.close();
});

/** One event in its own transaction; `rollback` throws after the append. */
async function write(i: number, rollback: boolean): Promise<void> {
  await t.ctx.database.db
    .transaction()
    .execute(async (trx) => {
      await t.ctx.events.append(trx, { type: 'signing_key.rotated', actor: null, data: { i } });
      if (rollback) throw new Error('rolled back');
    })
    .catch((err: Error) => {
      if (err.message !== 'rolled back') throw err;
    });
}

describe('webhooks and events at once', () => {
  it(`two workers send each delivery once (${ROUNDS} rounds of 12 deliveries)`, async () => {
    sink.answer = () => ({ status: 200, delayMs: 20 });
    const e = await createEndpoint(t, { url: sink.url, eventTypes: ['signing_key.rotated'] });
    for (let round = 0; round < ROUNDS; round++) {
      sink.received.length = 0;
      for (let i = 0; i < 12; i++) await write(i, false);
      const [a, b] = [worker(t), worker(t)];
      const sent = await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()]);
      expect(sent[0] + sent[1], `round ${round}`).toBe(12);
      const ids = sink.received.map((r) => String(r.headers['webhook-id']));
      expect(ids.length, `round ${round}`).toBe(12);
      expect(new Set(ids).size, `round ${round}`).toBe(12);
    }
    const rows = await deliveriesOf(t, e.id);
    expect(rows).toHaveLength(12 * ROUNDS);
    expect(rows.every((d) => d.status === 'delivered' && d.attempts === 1)).toBe(true);
    await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
  });

  it(`a cursor reader racing writers and stampers misses nothing and sees no rolled-back event`, async () => {
    const reader = new EventReader(t.ctx);
    let cursor = '0';
    for (;;) {
      const page = await reader.page({ after: cursor, limit: 100 });
      cursor = page.pageInfo.nextCursor ?? cursor;
      if (!page.pageInfo.hasNextPage) break;
    }
    const start = Number(cursor);
    const seen: number[] = [];
    const seenData: number[] = [];
    let writing = true;
    const read = async () => {
      for (;;) {
        const done = !writing;
        const page = await reader.page({ after: cursor, limit: 100 });
        for (const ev of page.items) {
          seen.push(ev.seq);
          seenData.push(ev.data.i as number);
        }
        cursor = page.pageInfo.nextCursor ?? cursor;
        if (done && !page.pageInfo.hasNextPage) return;
      }
    };
    const readers = [read()];
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let k = 0; k < 25; k++) await write(w * 1000 + k, k % 5 === 4);
    });
    const stamper = worker(t);
    const stampers = (async () => {
      while (writing) await stamper.runOnce();
    })();
    await Promise.all(writers);
    writing = false;
    await Promise.all([...readers, stampers]);
    const committed = 8 * 20;
    expect(seen).toEqual(Array.from({ length: committed }, (_, i) => start + i + 1));
    expect(seenData.every((i) => (i % 1000) % 5 !== 4)).toBe(true);
    expect(new Set(seenData).size).toBe(committed);
  });
});
