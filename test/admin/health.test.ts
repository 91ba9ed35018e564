import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LAG_LIMIT_SECONDS, ROTATE_AFTER_DAYS } from '../../src/features/health/operators/service.js';
import { admin, createEndpoint, type Sink, startSink, worker } from '../events/support.js';
import { ADMIN_KEY, adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';

// GET /admin/v1/health (docs/admin.md, "Health"): readiness, signing-key ages and queue depths,
// figures read from the database, each section ok or degraded.
const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

let t: TestApp;
let sink: Sink;

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

async function health(app = t) {
  const res = await adminRequest(app.admin!, 'GET', '/health');
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
}

async function disableSomeone(): Promise<void> {
  const p = await createPerson(t.ctx);
  expect((await admin(t, 'POST', `/identities/${p.identityId}/disablements`)).statusCode).toBe(204);
}

describe('health', () => {
  beforeEach(async () => {
    t.clock.set(new Date('2026-03-01T12:00:00.000Z'));
    sink = await startSink();
  });
  afterEach(async () => {
    const list = (await admin(t, 'GET', '/webhook-endpoints?limit=100')).json().data as Array<{ id: string }>;
    for (const e of list) await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
    await sink.close();
  });

  it('a fresh service is ok: the database up, Redis not configured, every key young, nothing queued', async () => {
    const h = await health();
    expect(h).toMatchObject({
      status: 'ok',
      checkedAt: '2026-03-01T12:00:00.000Z',
      readiness: {
        status: 'ok',
        database: { status: 'up' },
        redis: { status: 'not_configured', latencyMs: null },
      },
      keys: { status: 'ok', rotateAfterDays: ROTATE_AFTER_DAYS },
      queues: {
        status: 'ok',
        webhookDeliveries: { pending: 0, due: 0, inFlight: 0, dead: 0, oldestDueAt: null },
        securityNotices: { pending: 0, oldestAt: null },
      },
    });
    expect(h.readiness.database.latencyMs).toBeGreaterThanOrEqual(0);
    const purposes = (h.keys.signing as { purpose: string; alg: string }[]).map(
      (k) => `${k.purpose} ${k.alg}`,
    );
    expect(purposes.sort()).toEqual(['access_token EdDSA', 'id_token EdDSA', 'id_token RS256']);
    // Ids and ages, never a key.
    expect(JSON.stringify(h)).not.toMatch(/"(d|x|n|k)":/);
  });

  it('uptime follows the clock', async () => {
    const before = await health();
    t.clock.advance(90);
    const after = await health();
    expect(after.uptimeSeconds - before.uptimeSeconds).toBe(90);
    expect(after.startedAt).toBe(before.startedAt);
  });

  it('pending deliveries are counted; waiting past the lag limit degrades the queues; delivered ones leave', async () => {
    await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    await disableSomeone();
    let h = await health();
    expect(h.queues.webhookDeliveries).toMatchObject({
      pending: 2,
      due: 2,
      inFlight: 0,
      dead: 0,
      oldestDueAt: '2026-03-01T12:00:00.000Z',
    });
    expect(h.queues.status).toBe('ok');
    t.clock.advance(LAG_LIMIT_SECONDS);
    expect((await health()).queues.status).toBe('ok');
    t.clock.advance(1);
    h = await health();
    expect(h.queues.status).toBe('degraded');
    expect(h.status).toBe('degraded');
    expect(await worker(t).runOnce()).toBe(2);
    expect(sink.received).toHaveLength(2);
    h = await health();
    expect(h.queues.webhookDeliveries).toMatchObject({ pending: 0, due: 0, oldestDueAt: null });
    expect(h.status).toBe('ok');
  });

  it('a failing endpoint degrades the queues; a delivery given up on counts as dead', async () => {
    await createEndpoint(t, { url: sink.url });
    sink.answer = () => ({ status: 410 });
    await disableSomeone();
    await worker(t).runOnce();
    const h = await health();
    expect(h.queues.webhookDeliveries).toMatchObject({ pending: 0, dead: 1, disabledEndpoints: 1 });
    sink.answer = () => ({ status: 500 });
    await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    await worker(t).runOnce();
    const failing = await health();
    expect(failing.queues.webhookDeliveries).toMatchObject({ pending: 1, due: 0, failingEndpoints: 1 });
    expect(failing.queues.status).toBe('degraded');
  });

  it('a key older than the rotation age is due, and degrades the keys', async () => {
    t.clock.advance(ROTATE_AFTER_DAYS * 86_400 - 1);
    expect((await health()).keys.status).toBe('ok');
    t.clock.advance(1);
    expect((await health()).keys.status).toBe('degraded');
    t.clock.advance((ROTATE_AFTER_DAYS + 1) * 86_400);
    const h = await health();
    expect(h.keys.status).toBe('degraded');
    for (const k of h.keys.signing) {
      expect(k.rotationDue).toBe(true);
      expect(k.ageDays).toBeGreaterThanOrEqual(ROTATE_AFTER_DAYS + 1);
      expect(Date.parse(k.rotateBy)).toBeLessThan(Date.parse(h.checkedAt));
    }
  });

  it('without a key: the one 401', async () => {
    const res = await adminRequest(t.admin!, 'GET', '/health', null);
    expect(res.statusCode).toBe(401);
    expect((await adminRequest(t.admin!, 'GET', '/health', ADMIN_KEY)).statusCode).toBe(200);
  });
});

describe('health: Redis', () => {
  it('REDIS_URL answering is up; one that does not answer is down and degrades readiness', async () => {
    const up = await createTestApp({ admin: true, env: { REDIS_URL } });
    try {
      const h = await health(up);
      expect(h.readiness.redis.status).toBe('up');
      expect(h.readiness.redis.latencyMs).toBeGreaterThanOrEqual(0);
    } finally {
      await up.close();
    }
    const down = await createTestApp({ admin: true, env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    try {
      const h = await health(down);
      expect(h.readiness).toMatchObject({ status: 'degraded', redis: { status: 'down', latencyMs: null } });
      expect(h.status).toBe('degraded');
    } finally {
      await down.close();
    }
  }, 120_000);
});
