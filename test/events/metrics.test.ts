import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { createEndpoint, type Sink, startSink, worker } from './support.js';

// Issue 44's observability: the outbox's depth and lateness read at each scrape (one query), and
// attempts by outcome with the receiver's answer time, counted as the worker records them.
let t: TestApp;
let port: number;
let good: Sink;
let bad: Sink;

beforeAll(async () => {
  port = await freePort();
  t = await createTestApp({ admin: true, env: { METRICS_PORT: String(port) } });
  good = await startSink();
  bad = await startSink();
  bad.answer = () => ({ status: 503 });
});
afterAll(async () => {
  await t?.close();
  await good?.close();
  await bad?.close();
});

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const emit = () =>
  t.ctx.database.db.transaction().execute(async (trx) => {
    await t.ctx.events.append(trx, { type: 'organization.updated', actor: null, data: { n: 1 } });
  });

describe('webhook metrics on /metrics', () => {
  it('show the queue depth, the oldest due age, attempts by outcome and their latency', async () => {
    await createEndpoint(t, { url: good.url });
    await createEndpoint(t, { url: bad.url });
    let text = await scrape();
    expect(sample(text, 'identity_webhook_deliveries_pending')).toBe(0);
    expect(sample(text, 'identity_webhook_oldest_due_seconds')).toBe(0);
    await emit();
    await emit();
    t.clock.advance(30);
    text = await scrape();
    expect(sample(text, 'identity_webhook_deliveries_pending')).toBe(4);
    expect(sample(text, 'identity_webhook_oldest_due_seconds')).toBe(30);
    const w = worker(t);
    expect(await w.runOnce()).toBe(4);
    text = await scrape();
    expect(sample(text, 'identity_webhook_attempts_total', 'outcome="delivered"')).toBe(2);
    expect(sample(text, 'identity_webhook_attempts_total', 'outcome="retry"')).toBe(2);
    expect(sample(text, 'identity_webhook_attempt_duration_seconds_count')).toBe(4);
    // The two failed ones wait 5 s for their retry: pending, none due yet.
    expect(sample(text, 'identity_webhook_deliveries_pending')).toBe(2);
    expect(sample(text, 'identity_webhook_oldest_due_seconds')).toBe(0);
    t.clock.advance(65);
    text = await scrape();
    expect(sample(text, 'identity_webhook_oldest_due_seconds')).toBe(60);
  });
});
