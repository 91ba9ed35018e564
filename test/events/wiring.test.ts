import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { admin, createEndpoint, deliveriesOf, type Sink, startSink, worker } from './support.js';

// The app runs the worker itself when WEBHOOK_POLL_MS is set, and stops it when it closes.
let t: TestApp;
let sink: Sink;

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { WEBHOOK_POLL_MS: '20' } });
  sink = await startSink();
});
afterAll(async () => {
  await sink?.close();
  await t?.close();
});

describe('the worker in the app', () => {
  it('delivers without being asked, and stamps the seq', async () => {
    const e = await createEndpoint(t, { url: sink.url });
    const p = await createPerson(t.ctx);
    expect((await admin(t, 'POST', `/identities/${p.identityId}/disablements`)).statusCode).toBe(204);
    await expect.poll(() => sink.received.length, { timeout: 5000 }).toBe(1);
    await expect
      .poll(async () => (await deliveriesOf(t, e.id))[0]?.status, { timeout: 5000 })
      .toBe('delivered');
    const unstamped = async () =>
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE seq IS NULL`.execute(
          t.ctx.database.db,
        )
      ).rows[0].n;
    await expect.poll(unstamped, { timeout: 5000 }).toBe(0);
    await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
  });

  it('a secret that no longer opens is a failed attempt, not a delivery claimed again every round', async () => {
    await t.ctx.webhooks.stop();
    const e = await createEndpoint(t, { url: sink.url });
    await sql`UPDATE webhook_endpoints SET sealed_secret = 'v1.AAAA.AAAA.AAAA' WHERE id = ${e.id}`.execute(
      t.ctx.database.db,
    );
    const p = await createPerson(t.ctx);
    await admin(t, 'POST', `/identities/${p.identityId}/disablements`);
    const before = sink.received.length;
    await worker(t).runOnce();
    expect(sink.received.length).toBe(before);
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'internal',
    });
    expect(await worker(t).runOnce()).toBe(0);
  });
});
