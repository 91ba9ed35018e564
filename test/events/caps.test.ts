import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { admin, createEndpoint, deliveriesOf, type Sink, startSink, worker } from './support.js';

// What is capped: the body a webhook sends (WEBHOOK_MAX_PAYLOAD_BYTES: past it `data` is left out
// and read from GET /admin/v1/events/{id}) and the answer read back (64 KiB, then the socket goes).
let t: TestApp;
let sink: Sink;
const MAX = 4096;

beforeAll(async () => {
  t = await createTestApp({
    admin: true,
    clock: new ManualClock(new Date()),
    env: { WEBHOOK_MAX_PAYLOAD_BYTES: String(MAX) },
  });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  sink = await startSink();
});
afterEach(async () => {
  const list = (await admin(t, 'GET', '/webhook-endpoints?limit=100')).json().data as Array<{ id: string }>;
  for (const e of list) await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
  await sink.close();
});

async function emit(data: Record<string, unknown>): Promise<string> {
  return t.ctx.database.db
    .transaction()
    .execute(
      async (trx) => (await t.ctx.events.append(trx, { type: 'organization.updated', actor: null, data })).id,
    );
}

describe('the payload cap', () => {
  it('an event over WEBHOOK_MAX_PAYLOAD_BYTES is sent signed without its data, which the admin API answers whole', async () => {
    const e = await createEndpoint(t, { url: sink.url });
    const small = await emit({ note: 'x'.repeat(100) });
    const large = await emit({ note: 'y'.repeat(MAX) });
    expect(await worker(t).runOnce()).toBe(2);
    const bodies = new Map(
      sink.received.map((r) => {
        const payload = new Webhook(e.secret).verify(r.body, r.headers as Record<string, string>) as {
          id: string;
        };
        return [payload.id, { raw: r.body, payload }];
      }),
    );
    expect(bodies.get(small)?.payload).toMatchObject({ data: { note: 'x'.repeat(100) } });
    expect(bodies.get(small)?.payload).not.toHaveProperty('dataOmitted');
    const cut = bodies.get(large);
    expect(cut?.payload).toMatchObject({
      id: large,
      type: 'organization.updated',
      data: null,
      dataOmitted: true,
    });
    expect(Buffer.byteLength(cut?.raw ?? '')).toBeLessThanOrEqual(MAX);
    const whole = await admin(t, 'GET', `/events/${large}`);
    expect(whole.statusCode, whole.body).toBe(200);
    expect(whole.json().data).toMatchObject({
      id: large,
      seq: expect.any(Number),
      data: { note: 'y'.repeat(MAX) },
    });
    expect((await admin(t, 'GET', `/events/${crypto.randomUUID()}`)).json().code).toBe(
      'admin.event_not_found',
    );
  });
});

describe('the answer read', () => {
  it('an answer that never ends is cut after 64 KiB: the attempt ends with its status, well before the timeout', async () => {
    let written = 0;
    const endless = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(16 * 1024, 'z');
        const pump = () => {
          while (!res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) return;
          }
        };
        res.on('drain', pump);
        pump();
      });
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = endless.address() as AddressInfo;
      const e = await createEndpoint(t, { url: `http://127.0.0.1:${port}/hooks` });
      await emit({ note: 'endless answer' });
      // Without the cap the read would last until this timeout: a failed attempt, `timeout`.
      expect(await worker(t, { timeoutMs: 5000 }).runOnce()).toBe(1);
      expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
        status: 'delivered',
        last_status_code: 200,
        last_error: null,
      });
      expect(written).toBeGreaterThan(64 * 1024);
    } finally {
      endless.closeAllConnections();
      await new Promise<void>((r) => endless.close(() => r()));
    }
  });
});
