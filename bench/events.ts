/**
 * Issue 44's rows of `npm run bench` (BENCH_ONLY=events): what events and their webhooks cost the
 * hot writes, and how fast the worker delivers. Called by bench/run.ts with its own helpers; runs
 * a service of its own (the same production environment, plus the operators' listener and
 * WEBHOOK_PRIVATE_ADDRESSES=allow so webhooks may go to a receiver on loopback) on a database of
 * its own: the main service's worker (production: private addresses refused) must not claim these
 * deliveries, and its environment is left as it is.
 */
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type autocannon from 'autocannon';
import { EventLog } from '../src/features/events/log.js';
import { systemClock } from '../src/platform/clock.js';
import { openDatabase } from '../src/platform/db/database.js';
import { adminQuery } from '../test/helpers/database.js';
import { freePort } from '../test/helpers/net.js';

/** The same shape as bench/run.ts's rows. */
export interface EventRow {
  scenario: string;
  rps: number;
  p50: number;
  p99: number;
  ratio: number | null;
  non2xx: number;
  note: string;
}

export interface EventBenchDeps {
  serviceEnv: Record<string, string>;
  dbUrl: string;
  password: string;
  connections: number;
  startService(env: Record<string, string>): Promise<{ proc: ChildProcess; base: string }>;
  run(opts: autocannon.Options): Promise<autocannon.Result>;
  /** The code of the last message the SMTP sink got for this address. */
  lastCode(to: string): string;
  /** The HTTP floor of the run, for the ratio column (null when not measured). */
  floorRps: number | null;
}

/** Endpoints subscribed to every type while the "with webhooks" rounds run. */
const ENDPOINTS = 3;
/** Events enqueued for the delivery rate. */
const DELIVERIES = Number(process.env.BENCH_WEBHOOK_DELIVERIES ?? 5000);

async function call(base: string, method: string, path: string, body?: unknown, key?: string) {
  const r = await fetch(base + path, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

/** A receiver on loopback that answers 204 to everything and counts what it got. */
async function startReceiver() {
  const state = { count: 0, first: 0, last: 0 };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const now = performance.now();
      if (state.count === 0) state.first = now;
      state.count++;
      state.last = now;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    state,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export async function eventBench(deps: EventBenchDeps): Promise<{ rows: EventRow[]; targets: string[] }> {
  const dbName = `bench_events_${randomBytes(4).toString('hex')}`;
  const server = deps.dbUrl.replace(/\/[^/]*$/, '/postgres');
  await adminQuery(server, `CREATE DATABASE ${dbName}`);
  const dbUrl = deps.dbUrl.replace(/\/[^/]*$/, `/${dbName}`);
  const adminKey = `adm_${randomBytes(24).toString('hex')}`;
  const adminPort = await freePort();
  const { proc, base } = await deps.startService({
    ...deps.serviceEnv,
    DATABASE_URL: dbUrl,
    METRICS_PORT: String(await freePort()),
    ADMIN_PORT: String(adminPort),
    ADMIN_API_KEYS: `bench:${createHash('sha256').update(adminKey).digest('hex')}`,
    WEBHOOK_PRIVATE_ADDRESSES: 'allow',
  });
  const admin = `http://127.0.0.1:${adminPort}/admin/v1`;
  const receiver = await startReceiver();
  const rows: EventRow[] = [];
  const targets: string[] = [];
  try {
    // Accounts of its own, through the real routes, for the renewal chains.
    const emails: string[] = [];
    for (let i = 0; i < deps.connections; i++) {
      const email = `events-${i}-${randomBytes(3).toString('hex')}@example.com`;
      const body = { identifierType: 'email', identifier: email, password: deps.password };
      if ((await call(base, 'POST', '/api/v1/sign-ups', body)).status !== 201) throw new Error('sign-up');
      const code = deps.lastCode(email);
      if ((await call(base, 'POST', '/api/v1/sign-ups/confirmations', { ...body, code })).status !== 204)
        throw new Error('confirmation');
      emails.push(email);
    }
    // One fresh session per connection before each renewal round: the chains whose renewal was in
    // flight when the previous round stopped are lost (their next token never read).
    const refresh: string[] = [];
    const freshChains = async () => {
      refresh.length = 0;
      for (let i = 0; i < emails.length; i += 4) {
        await Promise.all(
          emails.slice(i, i + 4).map(async (email) => {
            const body = { identifierType: 'email', identifier: email, password: deps.password };
            for (let tries = 0; ; tries++) {
              const si = await call(base, 'POST', '/api/v1/sign-ins', body);
              if (si.status === 201) {
                refresh.push(si.json.data.refreshToken);
                return;
              }
              // Right after a sign-up round the service may still shed load (503).
              if (si.status !== 503 || tries >= 40) throw new Error(`sign-in ${si.status}`);
              await new Promise((resolve) => setTimeout(resolve, 500));
            }
          }),
        );
      }
    };
    const endpoints: string[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const r = await call(admin, 'POST', '/webhook-endpoints', { url: receiver.url }, adminKey);
      if (r.status !== 201) throw new Error(`endpoint ${r.status}`);
      endpoints.push(r.json.data.id);
    }
    const subscribe = async (on: boolean) => {
      for (const id of endpoints) {
        // Right after a sign-up round the service may still shed load (503): try again a while.
        for (let tries = 0; ; tries++) {
          const r = await call(
            admin,
            on ? 'DELETE' : 'POST',
            `/webhook-endpoints/${id}/disablements`,
            undefined,
            adminKey,
          );
          if (r.status === 204) break;
          if (r.status !== 503 || tries >= 40) throw new Error(`disablement ${r.status}`);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    };

    let k = 0;
    const signUps: autocannon.Options = {
      url: base,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/sign-ups',
          setupRequest: (req) => {
            req.headers = { ...req.headers, 'content-type': 'application/json' };
            req.body = JSON.stringify({
              identifierType: 'email',
              identifier: `events-load-${k++}-${randomBytes(4).toString('hex')}@example.com`,
              password: deps.password,
            });
            return req;
          },
        },
      ],
    };
    const renewals: autocannon.Options = {
      url: base,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/sign-ins/renewals',
          setupRequest: (req) => {
            req.headers = { ...req.headers, 'content-type': 'application/json' };
            req.body = JSON.stringify({ refreshToken: refresh.shift() ?? 'exhausted' });
            return req;
          },
          onResponse: (status, body) => {
            if (status === 201) refresh.push(JSON.parse(body).data.refreshToken);
          },
        },
      ],
    };
    const measure = async (opts: autocannon.Options) => {
      if (opts.requests === renewals.requests) await freshChains();
      return deps.run(opts);
    };
    // Warm-up, then rounds in turn (none, with, with, none), so drift over the run weighs on both.
    await measure({ ...renewals, duration: 3 });
    for (const [name, opts] of [
      ['POST /api/v1/sign-ups', signUps],
      ['POST /api/v1/sign-ins/renewals', renewals],
    ] as const) {
      const none: autocannon.Result[] = [];
      const withHooks: autocannon.Result[] = [];
      await subscribe(false);
      none.push(await measure(opts));
      await subscribe(true);
      withHooks.push(await measure(opts));
      withHooks.push(await measure(opts));
      await subscribe(false);
      none.push(await measure(opts));
      // Answers that did the work (2xx) per second: a refused request costs far less than a renewal.
      const mean = (rs: autocannon.Result[]) => rs.reduce((s, r) => s + r['2xx'] / r.duration, 0) / rs.length;
      const codes = (rs: autocannon.Result[]) =>
        JSON.stringify(
          rs.map((r) =>
            Object.fromEntries(
              Object.entries(r.statusCodeStats ?? {}).map(([c, v]) => [c, (v as { count: number }).count]),
            ),
          ),
        );
      const errors = (rs: autocannon.Result[]) =>
        rs.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0);
      const noneRps = mean(none);
      const withRps = mean(withHooks);
      const cost = 1 - withRps / noneRps;
      const last = withHooks[1];
      rows.push({
        scenario: `${name} with ${ENDPOINTS} webhook endpoints subscribed to every type`,
        rps: withRps,
        p50: last.latency.p50,
        p99: last.latency.p99,
        ratio: deps.floorRps ? withRps / deps.floorRps : null,
        non2xx: errors(withHooks),
        note: `events' cost: ${(cost * 100).toFixed(1)}% (${withRps.toFixed(0)} vs ${noneRps.toFixed(0)} req/s with none, 2xx answers per second, means of two rounds each, in turn; ${errors(none)} errors without); ${receiver.state.count} webhooks received${process.env.BENCH_DEBUG ? `; status codes with ${codes(withHooks)}, without ${codes(none)}` : ''}`,
      });
      targets.push(
        `| Events cost ${name} < 5% of its throughput (${ENDPOINTS} endpoints subscribed vs none, same run) | ${(cost * 100).toFixed(1)}% (${withRps.toFixed(0)} vs ${noneRps.toFixed(0)} req/s) | ${cost < 0.05 ? 'met' : 'missed'} |`,
      );
    }

    // Deliveries per second: DELIVERIES events, one endpoint, a receiver on loopback.
    await subscribe(false);
    const one = await call(admin, 'POST', '/webhook-endpoints', { url: receiver.url }, adminKey);
    if (one.status !== 201) throw new Error(`endpoint ${one.status}`);
    const database = await openDatabase({ url: dbUrl, dataDir: '' });
    const events = new EventLog(systemClock);
    const before = receiver.state.count;
    receiver.state.count = 0;
    try {
      for (let i = 0; i < DELIVERIES; i += 500) {
        await database.db.transaction().execute(async (trx) => {
          for (let j = i; j < Math.min(i + 500, DELIVERIES); j++)
            await events.append(trx, { type: 'organization.updated', actor: null, data: { bench: j } });
        });
      }
      const enqueued = performance.now();
      const deadline = enqueued + 120_000;
      while (receiver.state.count < DELIVERIES && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const got = receiver.state.count;
      // What became of the deliveries of that endpoint (errors when some were not delivered).
      const states = await database.db
        .selectFrom('webhook_deliveries')
        .select((eb) => ['status', 'last_error', eb.fn.countAll<string>().as('n')])
        .where('endpoint_id', '=', one.json.data.id)
        .groupBy(['status', 'last_error'])
        .execute();
      const outcome = states
        .map((r) => `${r.status}${r.last_error ? ` (${r.last_error})` : ''}: ${r.n}`)
        .join(', ');
      const seconds = (receiver.state.last - receiver.state.first) / 1000;
      const rate = got > 1 ? (got - 1) / seconds : 0;
      const wall = (receiver.state.last - enqueued) / 1000;
      rows.push({
        scenario: 'webhook deliveries to a receiver on loopback (one endpoint, the worker of one instance)',
        rps: rate,
        p50: 0,
        p99: 0,
        ratio: null,
        non2xx: DELIVERIES - got,
        note: `${got} of ${DELIVERIES} delivered in ${seconds.toFixed(2)} s from the first to the last (${wall.toFixed(2)} s from the commit of the last batch, WEBHOOK_POLL_MS ${deps.serviceEnv.WEBHOOK_POLL_MS ?? 1000} included); deliveries ${outcome}; ${before} received earlier`,
      });
      targets.push(
        `| Webhook deliveries ≥ 500/s to a local receiver | ${rate.toFixed(0)}/s (${got} of ${DELIVERIES}) | ${rate >= 500 && got === DELIVERIES ? 'met' : 'missed'} |`,
      );
    } finally {
      await database.close();
    }
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    await receiver.close();
    await adminQuery(server, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  }
  return { rows, targets };
}
