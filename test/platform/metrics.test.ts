import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentSignals } from '../../src/platform/metrics/signals.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { lastCode } from '../helpers/outbox.js';
import { otherCode } from '../registration/helpers.js';

/**
 * Issue 12 item 4: Prometheus text on its own listener (METRICS_PORT), scraped after real traffic;
 * each count is checked against the requests that were made.
 */

let t: TestApp;
let person: Person;
let port: number;

beforeAll(async () => {
  port = await freePort();
  t = await createTestApp({
    env: {
      METRICS_PORT: String(port),
      // Ten free guesses per subject (the least allowed), so the eleventh is refused by its budget.
      RATE_LIMIT_GUESSES: '10/60',
      // One sign-up per address a minute, so the second is refused by the route's limit.
      RATE_LIMIT_SENDS_A_MESSAGE: '1/60',
    },
  });
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

/** The value of one sample: the metric's name and every label given must match. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[3]);
  }
  return undefined;
}

const post = (url: string, payload: object, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload, headers });

describe('GET /metrics on METRICS_PORT', () => {
  it('counts requests, refusals, lock trips, revocations and deliveries as they happened', async () => {
    // Sessions: one signed out, one ended by a replayed refresh token.
    const first = await signIn(t.app, person);
    expect((await post('/sign-outs', {}, bearer(first.accessToken))).statusCode).toBe(204);
    const second = await signIn(t.app, person);
    expect((await post('/sign-ins/renewals', { refreshToken: second.refreshToken })).statusCode).toBe(201);
    expect((await post('/sign-ins/renewals', { refreshToken: second.refreshToken })).statusCode).toBe(401);

    // Eleven wrong passwords: ten refused as wrong, the eleventh by the budget before it is checked.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const res = await post('/sign-ins', {
        identifierType: 'email',
        identifier: person.email,
        password: `wrong ${i}`,
      });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([...Array(10).fill(401), 429]);

    // A registration (one message delivered), a second refused by the route's limit, and five
    // wrong codes that trip the pending identity's lock.
    const address = `metrics-${person.identityId.slice(0, 8)}@example.com`;
    const registration = { identifierType: 'email', identifier: address, password: 'a password for metrics' };
    expect((await post('/sign-ups', registration)).statusCode).toBe(201);
    expect((await post('/sign-ups', registration)).statusCode).toBe(429);
    const wrong = otherCode(lastCode(t.config.dataDir, address));
    for (let i = 0; i < 5; i++) {
      const res = await post('/sign-ups/confirmations', { ...registration, code: wrong });
      expect(res.statusCode).toBe(422);
    }

    const text = await scrape();
    const requests = (route: string, status: string) =>
      sample(text, 'identity_http_requests_total', { route, method: 'POST', status });
    expect(requests('/api/v1/sign-ins', '201')).toBe(2);
    expect(requests('/api/v1/sign-ins', '401')).toBe(10);
    expect(requests('/api/v1/sign-ins', '429')).toBe(1);
    expect(requests('/api/v1/sign-ins/renewals', '201')).toBe(1);
    expect(requests('/api/v1/sign-ins/renewals', '401')).toBe(1);
    expect(requests('/api/v1/sign-ups/confirmations', '422')).toBe(5);
    expect(
      sample(text, 'identity_http_request_duration_seconds_count', {
        route: '/api/v1/sign-ins',
        method: 'POST',
      }),
    ).toBe(13);

    expect(sample(text, 'identity_refusals_total', { rule: 'guesses:password' })).toBe(1);
    expect(sample(text, 'identity_refusals_total', { rule: 'route:/api/v1/sign-ups' })).toBe(1);
    expect(sample(text, 'identity_lock_trips_total')).toBe(1);
    expect(sample(text, 'identity_session_revocations_total', { reason: 'signed_out' })).toBe(1);
    expect(sample(text, 'identity_session_revocations_total', { reason: 'refresh_token_replayed' })).toBe(1);
    expect(sample(text, 'identity_deliveries_total', { channel: 'email', outcome: 'delivered' })).toBe(1);

    // Argon2id: every hash and verify waited its turn (and was timed); nothing waits now.
    expect(sample(text, 'identity_argon2_wait_seconds_count')).toBeGreaterThanOrEqual(13);
    expect(sample(text, 'identity_argon2_operations', { state: 'waiting' })).toBe(0);
    // The pool on the PostgreSQL server; PGlite has none.
    if (t.db.url) expect(sample(text, 'identity_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    else expect(sample(text, 'identity_db_pool_connections', { state: 'total' })).toBeUndefined();
    // Node's own: the event loop's delay and the process.
    expect(sample(text, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);

    // Route patterns only: no address, token or path a client sent.
    for (const secret of [person.email, address, second.refreshToken, first.accessToken]) {
      expect(text).not.toContain(secret);
    }
  });

  it('is not served beside the API, and answers nothing else on its own port', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('is off without METRICS_PORT: every signal is the silent no-op', async () => {
    const off = await createTestApp();
    try {
      expect(off.ctx.signals).toBe(silentSignals);
    } finally {
      await off.close();
    }
  });
});
