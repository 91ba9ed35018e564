import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { type Database, openDatabase } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrator.js';
import { createTestApp, type TestApp, testEnv } from '../helpers/app.js';
import { createServerSchema, SERVER_URL } from '../helpers/database.js';
import { TcpProxy, UUID_RE, waitFor } from './support.js';

type Report = {
  status: string;
  info: Record<string, { status: string; responseTime: number }>;
  error: Record<string, { status: string; responseTime: number }>;
  details: Record<string, { status: string; responseTime: number }>;
};

function expectReport(body: unknown): Report {
  const r = body as Report;
  expect(Object.keys(r).sort()).toEqual(['details', 'error', 'info', 'status']);
  expect(['ok', 'error']).toContain(r.status);
  for (const part of [r.info, r.error, r.details]) {
    expect(typeof part).toBe('object');
    for (const check of Object.values(part)) {
      expect(typeof check.status).toBe('string');
      expect(typeof check.responseTime).toBe('number');
      expect(check.responseTime).toBeGreaterThanOrEqual(0);
    }
  }
  return r;
}

describe('health probes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /health/live reports the raw health report', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/live' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toMatch(UUID_RE);
    const r = expectReport(res.json());
    expect(r.status).toBe('ok');
    expect(r.error).toEqual({});
    expect(Object.keys(r.details).length).toBeGreaterThan(0);
    expect(res.json()).not.toHaveProperty('data');
  });

  it('GET /health/ready includes the database', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    const r = expectReport(res.json());
    expect(r.status).toBe('ok');
    expect(r.info.database.status).toBe('up');
    expect(r.details.database.status).toBe('up');
    expect(r.error).toEqual({});
  });

  it('is served only without prefix or version', async () => {
    for (const url of ['/api/v1/health/live', '/api/health/ready', '/health', '/health/live/']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().code).toBe('route.not_found');
    }
  });
});

describe('readiness follows the PostgreSQL server (through a TCP proxy)', () => {
  let proxy: TcpProxy;
  let database: Database;
  let dropSchema: () => Promise<void>;
  let app: FastifyInstance;
  let ctx: AppContext;

  beforeAll(async () => {
    const target = new URL(SERVER_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const viaProxy = new URL(SERVER_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const { schema, drop } = await createServerSchema();
    dropSchema = drop;
    database = await openDatabase({ url: viaProxy.toString(), dataDir: '', schema, poolSize: 5 });
    await migrate(database.db);
    const config = loadConfig(testEnv());
    ({ app, ctx } = await buildApp({ config, database, logStream: new PassThrough() }));
    app.get('/api/v1/_test/db', async () => {
      const r = await sql<{ one: number }>`SELECT 1 AS one`.execute(ctx.database.db);
      return { data: { one: r.rows[0].one } };
    });
    app.get('/api/v1/_test/slow', async () => {
      await sql`SELECT pg_sleep(7.123)`.execute(ctx.database.db);
      return { data: { slept: true } };
    });
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await database?.close();
    await proxy?.stop();
    await dropSchema?.();
  });

  it('answers 200, then 503 while the database is unreachable, then 200 again', async () => {
    const up = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(up.statusCode).toBe(200);
    expect(expectReport(up.json()).info.database.status).toBe('up');
    const business = await app.inject({ method: 'GET', url: '/api/v1/_test/db' });
    expect(business.statusCode).toBe(200);
    expect(business.json()).toEqual({ data: { one: 1 } });

    await proxy.stop();

    const down = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(down.statusCode).toBe(503);
    expect(down.headers['content-type']).toMatch(/^application\/json/);
    const r = expectReport(down.json());
    expect(r.status).toBe('error');
    expect(r.error.database.status).toBe('down');
    expect(r.details.database.status).toBe('down');
    expect(r.info).toEqual({});

    // Liveness never touches the database.
    const live = await app.inject({ method: 'GET', url: '/health/live' });
    expect(live.statusCode).toBe(200);
    expect(live.json().status).toBe('ok');

    // A business request while the database is down is a retryable 503 Problem.
    for (let i = 0; i < 3; i++) {
      const refused = await app.inject({ method: 'GET', url: '/api/v1/_test/db' });
      expect(refused.statusCode).toBe(503);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expect(refused.headers['x-request-id']).toMatch(UUID_RE);
      expect(refused.json()).toMatchObject({
        type: '/problems/service.unavailable',
        status: 503,
        code: 'service.unavailable',
        retryable: true,
      });
      expect(refused.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|SELECT/);
    }

    await proxy.start();

    const back = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(back.statusCode).toBe(200);
    expect(expectReport(back.json()).status).toBe('ok');
    const again = await app.inject({ method: 'GET', url: '/api/v1/_test/db' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ data: { one: 1 } });
  });

  it('a query in flight when the connection drops answers 503 and the process survives', async () => {
    await proxy.start(); // a no-op when already up
    const admin = new pg.Client({ connectionString: SERVER_URL });
    await admin.connect();
    try {
      const pending = app.inject({ method: 'GET', url: '/api/v1/_test/slow' });
      await waitFor(
        async () => {
          const r = await admin.query(
            "SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(7.123)%' AND pid <> pg_backend_pid()",
          );
          return r.rowCount ? true : undefined;
        },
        5000,
        'the slow query to run',
      );
      await proxy.stop();
      const res = await pending;
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'service.unavailable', retryable: true });
      await proxy.start();
      const ready = await app.inject({ method: 'GET', url: '/health/ready' });
      expect(ready.statusCode).toBe(200);
    } finally {
      await admin.query(
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(7.123)%' AND pid <> pg_backend_pid()",
      );
      await admin.end();
    }
  });
});
