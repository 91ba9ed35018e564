import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { limitFor } from '../../src/platform/rate-limit/rate-limit.js';
import { createTestApp, type TestApp, testEnv } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { UUID_RE, waitFor } from './support.js';

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const LIMIT = { max: 3, windowSeconds: 60 };

function addLimitedRoutes(app: FastifyInstance) {
  app.post('/api/v1/_test/limited', { config: limitFor(LIMIT, 'test') }, async () => ({
    data: { ok: true },
  }));
  app.post('/api/v1/_test/other', { config: limitFor(LIMIT, 'other') }, async () => ({ data: { ok: true } }));
  app.get('/api/v1/_test/unlimited', async () => ({ data: { ok: true } }));
  // Used only to learn when an instance's Redis connection is up (see below).
  app.get(
    '/api/v1/_test/warm',
    { config: limitFor({ max: 1_000_000, windowSeconds: 60 }, 'warm') },
    async () => ({
      data: { ok: true },
    }),
  );
}

function expect429(res: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  expect(res.statusCode).toBe(429);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  expect(res.headers['x-request-id']).toMatch(UUID_RE);
  const body = JSON.parse(res.body);
  expect(body).toMatchObject({
    type: '/problems/rate_limit.exceeded',
    status: 429,
    code: 'rate_limit.exceeded',
    retryable: true,
  });
  const retryAfter = String(res.headers['retry-after']);
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(LIMIT.windowSeconds);
}

describe('rate limits in process', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      extend(app) {
        addLimitedRoutes(app);
        app.post(
          '/api/v1/_test/short',
          { config: limitFor({ max: 1, windowSeconds: 1 }, 'short') },
          async () => ({
            data: { ok: true },
          }),
        );
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses the fourth request with 429 rate_limit.exceeded and Retry-After', async () => {
    const post = () => t.app.inject({ method: 'POST', url: '/api/v1/_test/limited' });
    for (let i = 0; i < LIMIT.max; i++) {
      const ok = await post();
      expect(ok.statusCode).toBe(200);
      expect(ok.headers).not.toHaveProperty('x-ratelimit-remaining');
    }
    expect429(await post());
    expect429(await post());
  });

  it('counts each route on its own and leaves unlimited routes alone', async () => {
    for (let i = 0; i < LIMIT.max; i++) {
      expect((await t.app.inject({ method: 'POST', url: '/api/v1/_test/other' })).statusCode).toBe(200);
    }
    expect429(await t.app.inject({ method: 'POST', url: '/api/v1/_test/other' }));
    for (let i = 0; i < 10; i++) {
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/_test/unlimited' })).statusCode).toBe(200);
    }
  });

  it('counts per client address', async () => {
    const other = await t.app.inject({
      method: 'POST',
      url: '/api/v1/_test/limited',
      remoteAddress: '10.1.2.3',
    });
    expect(other.statusCode).toBe(200);
  });

  it('frees the route once the window has passed', async () => {
    const post = () => t.app.inject({ method: 'POST', url: '/api/v1/_test/short' });
    expect((await post()).statusCode).toBe(200);
    expect((await post()).statusCode).toBe(429);
    await waitFor(
      async () => ((await post()).statusCode === 200 ? true : undefined),
      5000,
      'the window to pass',
      250,
    );
  });
});

describe('rate limits shared through Redis by two instances', () => {
  const namespace = `rl-shared-${randomBytes(4).toString('hex')}:`;
  let db: TestDatabase;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let probe: Redis;

  beforeAll(async () => {
    db = await createTestDatabase();
    probe = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await probe.connect();
    // Instances of one deployment share their configuration (SECRETS_KEY included).
    const config = loadConfig(testEnv({ REDIS_URL }));
    for (const which of ['a', 'b'] as const) {
      const { app } = await buildApp({
        config,
        database: db.database,
        logStream: new PassThrough(),
        rateLimitNamespace: namespace,
      });
      addLimitedRoutes(app);
      await app.ready();
      if (which === 'a') a = app;
      else b = app;
    }
    // The limiter fails open while an instance's Redis connection is not up yet; wait until each
    // instance's request shows up in Redis before counting anything.
    const warmKey = `${namespace}GET/api/v1/_test/warm-warm|127.0.0.1`;
    for (const app of [a, b]) {
      await waitFor(
        async () => {
          const before = Number((await probe.get(warmKey)) ?? 0);
          await app.inject({ method: 'GET', url: '/api/v1/_test/warm' });
          const after = Number((await probe.get(warmKey)) ?? 0);
          return after > before ? true : undefined;
        },
        10_000,
        'the instance to reach Redis',
      );
    }
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (probe) {
      const keys = await probe.keys(`${namespace}*`);
      if (keys.length) await probe.del(...keys);
      probe.disconnect();
    }
    await db?.drop();
  });

  it('shares one count across instances', async () => {
    const onA = () => a.inject({ method: 'POST', url: '/api/v1/_test/limited' });
    const onB = () => b.inject({ method: 'POST', url: '/api/v1/_test/limited' });
    expect((await onA()).statusCode).toBe(200);
    expect((await onB()).statusCode).toBe(200);
    expect((await onA()).statusCode).toBe(200);
    // The fourth request overall is refused, whichever instance it reaches.
    expect429(await onB());
    expect429(await onA());
    const keys = await probe.keys(`${namespace}POST/api/v1/_test/limited-*`);
    expect(keys).toHaveLength(1);
    expect(Number(await probe.get(keys[0]))).toBeGreaterThanOrEqual(4);
  });
});
