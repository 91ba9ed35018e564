import { createPublicKey, verify } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { v1Signature } from '../../src/features/events/webhooks/signing.js';
import { DISABLE_AFTER_FAILING_SECONDS, RETRY_SECONDS } from '../../src/features/events/webhooks/worker.js';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { admin, createEndpoint, deliveriesOf, eventCount, type Sink, startSink, worker } from './support.js';

// Delivery, end to end, to a real receiver on loopback: Standard Webhooks headers verified by the
// published library (v1) and by node:crypto (v1a), the retry schedule on a manual clock,
// Retry-After, 410, dead, the same webhook-id on every attempt, rotation, and shutdown.
let t: TestApp;
let sink: Sink;

beforeAll(async () => {
  // standardwebhooks checks the timestamp against the real time: the manual clock starts there.
  t = await createTestApp({ admin: true, clock: new ManualClock(new Date()) });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  // Back to the real time for the library's timestamp check (retry tests move days ahead).
  t.clock.set(new Date());
  sink = await startSink();
});
afterEach(async () => {
  // Each test's endpoints go, so no later event is queued for them.
  const list = (await admin(t, 'GET', '/webhook-endpoints?limit=100')).json().data as Array<{ id: string }>;
  for (const e of list) await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
  await sink.close();
});

/** One operator act that emits one identity event. */
async function disableSomeone(): Promise<string> {
  const p = await createPerson(t.ctx);
  expect((await admin(t, 'POST', `/identities/${p.identityId}/disablements`)).statusCode).toBe(204);
  return p.identityId;
}

/** The v1a signature of a request, checked with the endpoint's published key. */
function v1aVerifies(publicKey: string, r: { headers: Record<string, unknown>; body: string }): boolean {
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
  const content = `${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`;
  const signatures = String(r.headers['webhook-signature'])
    .split(' ')
    .filter((s) => s.startsWith('v1a,'))
    .map((s) => Buffer.from(s.slice(4), 'base64'));
  return signatures.length > 0 && signatures.every((sig) => verify(null, Buffer.from(content), key, sig));
}

describe('delivery', () => {
  it('signs the Standard Webhooks way: v1 verified by standardwebhooks, v1a by node:crypto', async () => {
    const e = await createEndpoint(t, { url: sink.url, ed25519: true });
    const identityId = await disableSomeone();
    expect(await worker(t).runOnce()).toBe(1);
    expect(sink.received).toHaveLength(1);
    const r = sink.received[0];
    const payload = new Webhook(e.secret).verify(r.body, r.headers as Record<string, string>) as {
      type: string;
      identityId: string;
      data: { id: string };
    };
    expect(payload).toMatchObject({ type: 'identity.disabled', identityId, data: { id: identityId } });
    expect(v1aVerifies(e.ed25519PublicKey as string, r)).toBe(true);
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
      status: 'delivered',
      attempts: 1,
      last_status_code: 200,
    });
    // A wrong secret does not verify.
    const other = await createEndpoint(t, { url: sink.url });
    expect(() => new Webhook(other.secret).verify(r.body, r.headers as Record<string, string>)).toThrow();
  });

  it('filters by type and by organization', async () => {
    const onlyEnabled = await createEndpoint(t, { url: sink.url, eventTypes: ['identity.enabled'] });
    const someOrg = await createEndpoint(t, { url: sink.url, organizationId: crypto.randomUUID() });
    await disableSomeone();
    expect(await deliveriesOf(t, onlyEnabled.id)).toHaveLength(0);
    expect(await deliveriesOf(t, someOrg.id)).toHaveLength(0);
  });

  it('retries on the schedule with the same webhook-id, then the delivery is dead', async () => {
    sink.answer = () => ({ status: 500 });
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    const w = worker(t);
    expect(await w.runOnce()).toBe(1);
    for (const wait of RETRY_SECONDS) {
      t.clock.advance(wait - 1);
      expect(await w.runOnce(), `not before ${wait} s`).toBe(0);
      t.clock.advance(1);
      expect(await w.runOnce(), `after ${wait} s`).toBe(1);
    }
    expect(sink.received).toHaveLength(RETRY_SECONDS.length + 1);
    expect(new Set(sink.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(sink.received.map((r) => r.body)).size).toBe(1);
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
      status: 'dead',
      attempts: 8,
      last_status_code: 500,
    });
    t.clock.advance(86400);
    expect(await w.runOnce()).toBe(0);
  });

  it('an endpoint failing for 5 days is disabled, with a log line and an event sent to the others, not to it', async () => {
    sink.answer = () => ({ status: 500 });
    const healthy = await startSink();
    try {
      const e = await createEndpoint(t, { url: sink.url });
      const other = await createEndpoint(t, { url: healthy.url });
      const view = async () => (await admin(t, 'GET', `/webhook-endpoints/${e.id}`)).json().data;
      const w = worker(t);
      await disableSomeone();
      const t0 = t.clock.now();
      expect(await w.runOnce()).toBe(2);
      expect(await view()).toMatchObject({ failingSince: t0.toISOString(), disabledAt: null });
      // The whole schedule: the delivery is dead after about 27 hours, the endpoint still enabled.
      for (const wait of RETRY_SECONDS) {
        t.clock.advance(wait);
        expect(await w.runOnce()).toBe(1);
      }
      expect((await deliveriesOf(t, e.id))[0]).toMatchObject({ status: 'dead', attempts: 8 });
      expect(t.logs()).toContain('webhook delivery dead');
      expect(await view()).toMatchObject({ failingSince: t0.toISOString(), disabledAt: null });
      // A later event failing one second short of 5 days: still enabled.
      t.clock.set(new Date(t0.getTime() + DISABLE_AFTER_FAILING_SECONDS * 1000 - 1000));
      await disableSomeone();
      expect(await w.runOnce()).toBe(2);
      expect((await view()).disabledAt).toBeNull();
      const disabledBefore = await eventCount(t, 'webhook_endpoint.disabled');
      // Its retry 5 s later, past 5 days of failing: disabled.
      t.clock.advance(RETRY_SECONDS[0]);
      expect(await w.runOnce()).toBe(1);
      const disabled = await view();
      expect(disabled).toMatchObject({
        disabledAt: t.clock.now().toISOString(),
        disabledReason: 'failing',
        failingSince: t0.toISOString(),
      });
      expect(t.logs()).toContain('webhook endpoint failing for 5 days: disabled');
      expect(await eventCount(t, 'webhook_endpoint.disabled')).toBe(disabledBefore + 1);
      // The event went to the other endpoint, not to the disabled one; it carries no secret.
      const mine = await deliveriesOf(t, e.id);
      expect(mine).toHaveLength(2);
      const received = healthy.received.length;
      expect(await w.runOnce()).toBe(1);
      const told = healthy.received.slice(received).map((r) => JSON.parse(r.body));
      expect(told).toEqual([
        expect.objectContaining({ type: 'webhook_endpoint.disabled', actor: null, data: disabled }),
      ]);
      expect(JSON.stringify(told)).not.toContain(e.secret.slice('whsec_'.length));
      expect(JSON.stringify(told)).not.toContain(other.secret.slice('whsec_'.length));
      // Later events are not queued for it; an operator's enablement starts it afresh.
      await disableSomeone();
      expect(await deliveriesOf(t, e.id)).toHaveLength(2);
      expect((await admin(t, 'DELETE', `/webhook-endpoints/${e.id}/disablements`)).statusCode).toBe(204);
      expect(await view()).toMatchObject({ disabledAt: null, failingSince: null });
    } finally {
      await healthy.close();
    }
  });

  it('a success ends the failing spell: failures on both sides of it do not disable', async () => {
    sink.answer = () => ({ status: 500 });
    const e = await createEndpoint(t, { url: sink.url, eventTypes: ['identity.disabled'] });
    const view = async () => (await admin(t, 'GET', `/webhook-endpoints/${e.id}`)).json().data;
    const w = worker(t);
    await disableSomeone();
    await w.runOnce();
    expect((await view()).failingSince).toBe(t.clock.now().toISOString());
    t.clock.advance(3 * 86400);
    sink.answer = () => ({ status: 204 });
    await w.runOnce(); // the first delivery's retry, due long ago: delivered
    expect((await view()).failingSince).toBeNull();
    sink.answer = () => ({ status: 500 });
    t.clock.advance(3 * 86400);
    await disableSomeone();
    await w.runOnce();
    expect(await view()).toMatchObject({ failingSince: t.clock.now().toISOString(), disabledAt: null });
  });

  it('jitter spreads each wait by at most 10 %', async () => {
    sink.answer = () => ({ status: 500 });
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    const before = t.clock.now().getTime();
    await worker(t, { random: () => 0.999 }).runOnce();
    const due = new Date((await deliveriesOf(t, e.id))[0].due_at).getTime() - before;
    expect(due).toBeGreaterThan(5000);
    expect(due).toBeLessThanOrEqual(5500);
  });

  it('honours Retry-After', async () => {
    let first = true;
    sink.answer = () => {
      const a = first ? { status: 503, headers: { 'retry-after': '120' } } : { status: 204 };
      first = false;
      return a;
    };
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    const w = worker(t);
    await w.runOnce();
    t.clock.advance(119);
    expect(await w.runOnce()).toBe(0);
    t.clock.advance(1);
    expect(await w.runOnce()).toBe(1);
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
      status: 'delivered',
      attempts: 2,
      last_status_code: 204,
    });
  });

  it('410 Gone disables the endpoint: nothing more is queued for it', async () => {
    sink.answer = () => ({ status: 410 });
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    await worker(t).runOnce();
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({ status: 'dead', last_status_code: 410 });
    const read = (await admin(t, 'GET', `/webhook-endpoints/${e.id}`)).json().data;
    expect(read).toMatchObject({ disabledReason: 'gone' });
    expect(t.logs()).toContain('webhook endpoint answered 410 Gone: disabled');
    const told = await t.ctx.database.db
      .selectFrom('events')
      .select('data')
      .where('type', '=', 'webhook_endpoint.disabled')
      .execute();
    expect(told.map((r) => (typeof r.data === 'string' ? JSON.parse(r.data) : r.data))).toContainEqual(read);
    await disableSomeone();
    expect(await deliveriesOf(t, e.id)).toHaveLength(1);
  });

  it('a rotation sends both signatures during the overlap, then only the new one', async () => {
    const e = await createEndpoint(t, { url: sink.url });
    const rotated = await admin(t, 'POST', `/webhook-endpoints/${e.id}/secret-rotations`, {
      overlapSeconds: 3600,
    });
    expect(rotated.statusCode).toBe(200);
    const secret = rotated.json().data.secret as string;
    expect(secret).not.toBe(e.secret);
    await disableSomeone();
    await worker(t).runOnce();
    const r = sink.received[0];
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const s of [e.secret, secret]) new Webhook(s).verify(r.body, r.headers as Record<string, string>);
    t.clock.advance(3601);
    await disableSomeone();
    await worker(t).runOnce();
    const later = sink.received[1];
    const id = String(later.headers['webhook-id']);
    const ts = Number(later.headers['webhook-timestamp']);
    expect(later.headers['webhook-signature']).toBe(v1Signature(secret, id, ts, later.body));
  });

  it('a redirect is not followed: the attempt failed, the other host got nothing', async () => {
    const elsewhere = await startSink();
    try {
      sink.answer = () => ({ status: 302, headers: { location: elsewhere.url } });
      const e = await createEndpoint(t, { url: sink.url });
      await disableSomeone();
      await worker(t).runOnce();
      expect(elsewhere.received).toHaveLength(0);
      expect((await deliveriesOf(t, e.id))[0]).toMatchObject({ status: 'pending', last_status_code: 302 });
    } finally {
      await elsewhere.close();
    }
  });

  it('stopping mid-send gives the delivery back unsent; the next worker sends it with the same webhook-id', async () => {
    sink.answer = () => ({ status: 200, delayMs: 5000 });
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    const w = worker(t);
    const round = w.runOnce();
    await expect.poll(() => sink.received.length).toBe(1);
    await w.stop();
    await round;
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
      status: 'pending',
      attempts: 0,
      lease_id: null,
    });
    sink.answer = () => ({ status: 200 });
    expect(await worker(t).runOnce()).toBe(1);
    expect(sink.received[1].headers['webhook-id']).toBe(sink.received[0].headers['webhook-id']);
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('lists an endpoint’s deliveries with their last attempt', async () => {
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    await worker(t).runOnce();
    const res = await admin(t, 'GET', `/webhook-endpoints/${e.id}/deliveries`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data[0]).toMatchObject({ status: 'delivered', attempts: 1, lastStatusCode: 200 });
  });

  it('a resend sends a delivered delivery again with the same webhook-id; unknown 404', async () => {
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    const w = worker(t);
    await w.runOnce();
    const [d] = await deliveriesOf(t, e.id);
    expect((await admin(t, 'POST', `/webhook-endpoints/${e.id}/deliveries/${d.id}/resends`)).statusCode).toBe(
      204,
    );
    expect(await w.runOnce()).toBe(1);
    expect(sink.received).toHaveLength(2);
    expect(sink.received[1].headers['webhook-id']).toBe(sink.received[0].headers['webhook-id']);
    expect(sink.received[1].body).toBe(sink.received[0].body);
    const unknown = await admin(
      t,
      'POST',
      `/webhook-endpoints/${e.id}/deliveries/${crypto.randomUUID()}/resends`,
    );
    expect(unknown.json().code).toBe('admin.webhook_delivery_not_found');
  });

  it('a recovery queues the dead deliveries and the events missed while disabled, not the delivered ones', async () => {
    // Past every event of the earlier tests, some of which moved the clock days ahead.
    t.clock.advance(7 * 86400);
    const since = t.clock.now().toISOString();
    const e = await createEndpoint(t, { url: sink.url });
    await disableSomeone();
    const w = worker(t);
    await w.runOnce(); // delivered
    sink.answer = () => ({ status: 500 });
    await disableSomeone();
    await w.runOnce();
    for (const wait of RETRY_SECONDS) {
      t.clock.advance(wait);
      await w.runOnce();
    }
    expect((await deliveriesOf(t, e.id)).map((d) => d.status).sort()).toEqual(['dead', 'delivered']);
    await admin(t, 'POST', `/webhook-endpoints/${e.id}/disablements`);
    await disableSomeone();
    await admin(t, 'DELETE', `/webhook-endpoints/${e.id}/disablements`);
    expect(await deliveriesOf(t, e.id)).toHaveLength(2);
    sink.answer = () => ({ status: 200 });
    const res = await admin(t, 'POST', `/webhook-endpoints/${e.id}/recoveries`, { since });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual({ queued: 2 });
    const before = sink.received.length;
    expect(await w.runOnce()).toBe(2);
    expect(sink.received.length - before).toBe(2);
    expect((await deliveriesOf(t, e.id)).map((d) => d.status)).toEqual([
      'delivered',
      'delivered',
      'delivered',
    ]);
  });
});
