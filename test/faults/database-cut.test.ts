import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { type Database, openDatabase } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrator.js';
import { testEnv } from '../helpers/app.js';
import { createServerSchema, SERVER_URL } from '../helpers/database.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { delay, TcpProxy, waitFor } from '../platform/support.js';
import { answered, call, expectNothingLeaked, expectUnavailable, type Outcome } from './support.js';

/**
 * Issue 7 item 3: the connection to the PostgreSQL server is cut (a TCP proxy on loopback, every
 * socket destroyed) while sign-ups and authenticated reads are in flight, some of them in the
 * middle of their transaction. Every answer is a declared success or a clean 503; readiness
 * follows the outage; nothing is half-written once the database is back.
 */
describe('the database connection is cut while requests are in flight', () => {
  const PASSWORD = `cut-${randomBytes(8).toString('hex')}-pw`;
  let proxy: TcpProxy;
  let dropSchema: () => Promise<void>;
  let schema: string;
  let database: Database;
  let config: Config;
  let app: FastifyInstance;
  let ctx: AppContext;
  let port: number;
  let admin: pg.Client;
  let observer: pg.Client;
  let person: Person;
  let accessToken: string;
  let secrets: string[];

  beforeAll(async () => {
    const target = new URL(SERVER_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    ({ schema, drop: dropSchema } = await createServerSchema());
    // Migrations go through a direct connection: the proxy is only in the service's path.
    const direct = await openDatabase({ url: SERVER_URL, dataDir: '', schema, poolSize: 2 });
    await migrate(direct.db);
    await direct.close();

    const viaProxy = new URL(SERVER_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    database = await openDatabase({ url: viaProxy.toString(), dataDir: '', schema, poolSize: 10 });
    config = loadConfig(testEnv({ LOG_LEVEL: 'warn' }));
    ({ app, ctx } = await buildApp({ config, database, logStream: new PassThrough() }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;

    admin = new pg.Client({ connectionString: SERVER_URL, options: `-c search_path=${schema}` });
    await admin.connect();
    observer = new pg.Client({ connectionString: SERVER_URL });
    await observer.connect();

    person = await createPerson(ctx);
    const signIn = answered(
      await call(port, '/api/v1/sign-ins', {
        body: { identifierType: 'email', identifier: person.email, password: person.password },
      }),
    );
    expect(signIn.status).toBe(201);
    accessToken = JSON.parse(signIn.body).data.accessToken;
    secrets = [
      PASSWORD,
      person.password,
      config.secretsKey.toString('base64'),
      viaProxy.toString(),
      SERVER_URL,
      `127.0.0.1:${proxy.port}`,
    ];
  });

  afterAll(async () => {
    // First, so no request stays parked behind the test's lock.
    await admin?.end().catch(() => {});
    await observer?.end().catch(() => {});
    await app?.close();
    await database?.close();
    await proxy?.stop();
    await dropSchema?.();
  });

  const address = (label: string, i: number) =>
    `cut-${label}-${i}-${randomBytes(3).toString('hex')}@example.com`;
  const signUp = (email: string) =>
    call(port, '/api/v1/sign-ups', {
      body: { identifierType: 'email', identifier: email, password: PASSWORD },
    });
  const context = () =>
    call(port, '/api/v1/session/context', { headers: { authorization: `Bearer ${accessToken}` } });

  it('answers success or 503 only, follows readiness, and leaves no half-written registration', async () => {
    // Liveness is polled through the whole run: it never touches the database.
    const liveStatuses: Array<number | string> = [];
    let polling = true;
    const livePoller = (async () => {
      while (polling) {
        const o = await call(port, '/health/live');
        liveStatuses.push(o.kind === 'answer' ? o.status : o.kind);
        await delay(20);
      }
    })();

    type Sent = { email: string; phase: string; outcome: Promise<Outcome> };
    const signUps: Sent[] = [];
    const reads: Array<{ phase: string; outcome: Promise<Outcome> }> = [];
    const fire = (phase: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const email = address(phase, i);
        signUps.push({ email, phase, outcome: signUp(email) });
      }
    };

    // Before the cut: a healthy batch.
    fire('before', 10);
    for (let i = 0; i < 5; i++) reads.push({ phase: 'before', outcome: context() });
    await Promise.all([...signUps, ...reads].map((s) => s.outcome));

    // Mid-transaction: the audit append is the last statement of a sign-up and takes the chain's
    // head row lock. Holding that lock from outside parks sign-ups after they inserted the identity,
    // the identifier and the challenge, with their transaction open, when the connection is cut.
    await admin.query('BEGIN');
    await admin.query('SELECT 1 FROM audit_head WHERE id = 1 FOR UPDATE');
    fire('parked', 20);
    for (let i = 0; i < 5; i++) reads.push({ phase: 'parked', outcome: context() });
    // Observed from another connection: statistics are a snapshot inside the locking transaction.
    const lockHolder = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const parked = await waitFor(
      async () => {
        // Waiters behind the first one queue on the tuple lock, so the blockers are followed transitively.
        const r = await observer.query<{ n: number }>(
          `WITH RECURSIVE parked(pid) AS (
             SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
             UNION
             SELECT a.pid FROM pg_stat_activity a JOIN parked p ON p.pid = ANY(pg_blocking_pids(a.pid))
           ) SELECT count(*)::int AS n FROM parked`,
          [lockHolder],
        );
        return r.rows[0].n >= 5 ? r.rows[0].n : undefined;
      },
      10_000,
      'sign-ups to wait on the audit head lock',
    );
    expect(parked).toBeGreaterThanOrEqual(5);

    await proxy.stop();
    const cutAt = Date.now();
    // The parked backends wake up only after the cut, so none of them can commit.
    await admin.query('ROLLBACK');

    // After the cut: new work while the database is unreachable.
    const after = Array.from({ length: 10 }, (_, i) => address('after', i));
    for (const [i, email] of after.entries()) {
      signUps.push({ email, phase: 'after', outcome: signUp(email) });
      if (i % 2 === 0) reads.push({ phase: 'after', outcome: context() });
      await delay(20);
    }

    const down = await waitFor(
      async () => {
        const o = await call(port, '/health/ready');
        return o.kind === 'answer' && o.status === 503 ? o : undefined;
      },
      5_000,
      '/health/ready to report the outage',
    );
    expect(Date.now() - cutAt).toBeLessThan(5_000);
    expect(JSON.parse(down.body).error.database.status).toBe('down');

    const settledSignUps = await Promise.all(signUps.map(async (s) => ({ ...s, result: await s.outcome })));
    const settledReads = await Promise.all(reads.map(async (r) => ({ ...r, result: await r.outcome })));

    await proxy.start();
    const backAt = Date.now();
    await waitFor(
      async () => {
        const o = await call(port, '/health/ready');
        return o.kind === 'answer' && o.status === 200 ? o : undefined;
      },
      10_000,
      '/health/ready to recover',
      100,
    );
    expect(Date.now() - backAt).toBeLessThan(10_000);

    // Every answer is complete and either the declared success or the retryable 503.
    const created: string[] = [];
    const refused: string[] = [];
    for (const s of settledSignUps) {
      const o = answered(s.result);
      const what = `sign-up ${s.phase} ${o.status} ${o.body}`;
      expectNothingLeaked(o, secrets, what);
      if (o.status === 201) {
        expect(JSON.parse(o.body).data.challengeDelivery.status, what).toBe('DELIVERED');
        created.push(s.email);
      } else {
        expectUnavailable(o, what);
        refused.push(s.email);
      }
    }
    for (const r of settledReads) {
      const o = answered(r.result);
      const what = `context ${r.phase} ${o.status} ${o.body}`;
      expectNothingLeaked(o, secrets, what);
      if (o.status === 200) expect(JSON.parse(o.body).data.identityId, what).toBe(person.identityId);
      else expectUnavailable(o, what);
    }
    const byPhase = (phase: string, status: number) =>
      settledSignUps.filter((s) => s.phase === phase && answered(s.result).status === status).length;
    expect(byPhase('before', 201)).toBe(10);
    // Each parked sign-up had its rows inserted when its connection died: none may have committed.
    expect(byPhase('parked', 503)).toBe(20);
    expect(byPhase('after', 503)).toBe(10);
    expect(
      settledReads.filter((r) => r.phase === 'before').every((r) => answered(r.result).status === 200),
    ).toBe(true);

    // The service is back for business: the session still works and a refused sign-up can be retried.
    const read = answered(await context());
    expect(read.status).toBe(200);
    const retried = refused[0];
    const retry = answered(await signUp(retried));
    expect(retry.status).toBe(201);
    created.push(retried);

    polling = false;
    await livePoller;
    expect(liveStatuses.length).toBeGreaterThanOrEqual(5);
    expect(liveStatuses.every((s) => s === 200)).toBe(true);

    // Read straight from the server: each 201 exists once, complete, with its sealed audit record.
    const rows = await admin.query<{ value: string; n: number; challenges: number; audited: number }>(
      `SELECT i.value, count(*) OVER (PARTITION BY i.value)::int AS n,
              (SELECT count(*)::int FROM challenges c WHERE c.identifier_id = i.id AND c.purpose = 'sign_up') AS challenges,
              (SELECT count(*)::int FROM audit_records a, challenges c
                WHERE c.identifier_id = i.id AND a.name = 'identity.sign_up.requested'
                  AND a.details->>'challengeId' = c.id::text) AS audited
       FROM identifiers i WHERE i.value = ANY($1)`,
      [created],
    );
    expect(rows.rows.map((r) => r.value).sort()).toEqual([...created].sort());
    for (const r of rows.rows) expect(r, r.value).toMatchObject({ n: 1, challenges: 1, audited: 1 });
    // A 503 committed nothing (the retried address aside).
    const leftovers = await admin.query(`SELECT value FROM identifiers WHERE value = ANY($1)`, [
      refused.filter((e) => e !== retried),
    ]);
    expect(leftovers.rows).toEqual([]);

    // Whole-schema invariants: no identity without identifier, no unverified identifier without its
    // challenge, no challenge without its audit record, and the audit chain intact.
    const orphans = await admin.query<{ kind: string; n: number }>(`
      SELECT 'identity without identifier' AS kind, count(*)::int AS n FROM identities x
        WHERE NOT EXISTS (SELECT 1 FROM identifiers i WHERE i.identity_id = x.id)
      UNION ALL
      SELECT 'unverified identifier without challenge', count(*)::int FROM identifiers i
        WHERE i.verified_at IS NULL AND NOT EXISTS (SELECT 1 FROM challenges c WHERE c.identifier_id = i.id)
      UNION ALL
      SELECT 'challenge without audit record', count(*)::int FROM challenges c
        WHERE c.purpose = 'sign_up' AND NOT EXISTS (
          SELECT 1 FROM audit_records a WHERE a.details->>'challengeId' = c.id::text)`);
    for (const o of orphans.rows) expect(o.n, o.kind).toBe(0);
    const identities = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM identities');
    expect(identities.rows[0].n).toBe(created.length + 1);
    expect(await verifyChain(ctx.database.db, deriveKey(config.secretsKey, 'audit-seal'))).toEqual({
      ok: true,
      count: created.length,
    });
  });
});
