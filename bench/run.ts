/**
 * npm run bench: starts the service with production settings on the PostgreSQL server (a fresh
 * database), drives it with autocannon from this process, and writes docs/performance.md.
 * Every throughput figure is also given as a ratio to GET /health/live measured in the same run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { sessionContext } from '../src/features/sessions/repository.js';
import { createPasswordHasher } from '../src/platform/crypto/passwords.js';
import { openDatabase } from '../src/platform/db/database.js';
import { adminQuery } from '../test/helpers/database.js';
import { freePort } from '../test/helpers/net.js';
import { startSmtpSink } from '../test/helpers/smtp.js';
import { eventBench } from './events.js';
import {
  BENCH_CLIENT,
  BENCH_DEVICE_CLIENT,
  benchOidcClients,
  clientBasic,
  codeFlowGrant,
  DpopKey,
  type OidcTokens,
} from './oidc.js';
import { probe } from './probe.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const USERS = CONNECTIONS;
// The device-grant poll scenario polls each of this many device codes once.
const DEVICE_CODES = Number(process.env.BENCH_DEVICE_CODES ?? 10000);
// BENCH_ONLY=context,renewals runs just those scenarios (the floor always runs): for profiling.
const ONLY = process.env.BENCH_ONLY?.split(',');
const want = (name: string) => !ONLY || ONLY.includes(name);

interface Row {
  scenario: string;
  rps: number;
  p50: number;
  p99: number;
  ratio: number | null;
  non2xx: number;
  note: string;
}

async function startService(
  env: Record<string, string>,
  entry = 'src/main.ts',
): Promise<{ proc: ChildProcess; base: string }> {
  const port = await freePort();
  // BENCH_CPU_PROF=1 writes a V8 CPU profile of the service to bench/profiles/ (--cpu-prof).
  const prof = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', '--cpu-prof-dir', join(ROOT, 'bench/profiles')]
    : [];
  const proc = spawn(process.execPath, [...prof, '--import', 'tsx', entry], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  // BENCH_READY_SECONDS: how long a start may take (30 s; more on a host loaded by other work).
  const tries = Number(process.env.BENCH_READY_SECONDS ?? 30) * 10;
  for (let i = 0; i < tries; i++) {
    try {
      const r = await fetch(`${base}/health/ready`);
      if (r.status === 200) return { proc, base };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error('service did not become ready');
}

/**
 * The database floor: the session read's own statement (GET /session/context's one round trip:
 * the guard's read, the identity summary and the memberships, sessionContext in the sessions
 * repository, imported, not copied), prepared per connection as the service prepares it, from as
 * many concurrent callers as autocannon has connections, with no HTTP. What the database alone
 * can serve.
 */
async function databaseFloor(url: string, sessionIds: string[]): Promise<{ rate: number; p99: number }> {
  // The service's own pool (20 connections): on two cores it serves this statement faster than a
  // connection per caller does (bench/analysis.md), so the floor is the higher of the two.
  const database = await openDatabase({ url, dataDir: '' });
  const latencies: number[] = [];
  let next = 0;
  const callers = async (until: number) => {
    while (performance.now() < until) {
      const started = performance.now();
      const row = await sessionContext(database.db, sessionIds[next++ % sessionIds.length]);
      if (!row) throw new Error('a session the floor reads is missing');
      latencies.push(performance.now() - started);
    }
  };
  // Warm-up: connections open and every statement is prepared on each of them.
  await Promise.all(Array.from({ length: CONNECTIONS }, () => callers(performance.now() + 1000)));
  latencies.length = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, () => callers(started + DURATION * 1000)));
  const seconds = (performance.now() - started) / 1000;
  await database.close();
  latencies.sort((a, b) => a - b);
  return { rate: latencies.length / seconds, p99: latencies[Math.floor(latencies.length * 0.99)] };
}

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

/** CPU time (user + system) a process has used, in ms, from /proc (Linux). */
function cpuMs(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * A run with the service's CPU time per answered request, in µs: unlike throughput on two shared
 * cores, this does not move with what the load generator and PostgreSQL take at the same moment.
 */
async function runCosted(proc: ChildProcess, opts: autocannon.Options) {
  const before = cpuMs(proc.pid);
  const result = await run(opts);
  const usPerRequest = ((cpuMs(proc.pid) - before) * 1000) / result.requests.total;
  return { result, usPerRequest };
}

function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ duration: DURATION, connections: CONNECTIONS, ...opts }, (err, res) =>
      err ? reject(err) : resolve(res),
    );
  });
}

/**
 * One scenario's row. `rps` is every answer per second, or with `successes` only the 2xx ones: a
 * route that sheds load (sign-in and sign-up answer 503 when the hashing queue is full) must not
 * count its refusals as throughput.
 */
function row(
  scenario: string,
  r: autocannon.Result,
  floor: number | null,
  note = '',
  successes = false,
): Row {
  if (process.env.BENCH_DEBUG) process.stdout.write(`${scenario}: ${JSON.stringify(r.statusCodeStats)}\n`);
  const rps = successes ? r['2xx'] / r.duration : r.requests.average;
  return {
    scenario,
    rps,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ratio: floor ? rps / floor : null,
    non2xx: r.non2xx + r.errors + r.timeouts,
    note,
  };
}

async function main() {
  const dbName = `bench_${randomBytes(4).toString('hex')}`;
  await adminQuery(SERVER, `CREATE DATABASE ${dbName}`);
  const dbUrl = SERVER.replace(/\/[^/]*$/, `/${dbName}`);
  const sink = await startSmtpSink();
  const password = 'bench password that is long enough';
  const serviceEnv = {
    NODE_ENV: 'production',
    PUBLIC_ORIGIN: 'https://id.bench.example',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    DATABASE_URL: dbUrl,
    // The production default unless a run asks otherwise (BENCH_LOG_LEVEL).
    ...(process.env.BENCH_LOG_LEVEL ? { LOG_LEVEL: process.env.BENCH_LOG_LEVEL } : {}),
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    MAIL_FROM: 'bench@example.com',
    // Metrics on, as in production: every answer is counted.
    METRICS_PORT: String(await freePort()),
    // One client address drives every request: the limits would measure themselves otherwise.
    RATE_LIMIT_SENDS_A_MESSAGE: '100000000/1',
    RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000000/1',
    RATE_LIMIT_PROVES_A_PASSWORD: '100000000/1',
    RATE_LIMIT_OIDC_CLIENTS: '100000000/1',
    RATE_LIMIT_OIDC_AUTHORIZATIONS: '100000000/1',
    // The OpenID Provider's client for its scenarios (bench/oidc.ts).
    OIDC_CLIENTS: benchOidcClients(),
  };
  // The service's own reading of that environment: the Argon2id cost below is the one it uses.
  const serviceConfig = loadConfig(serviceEnv);
  // What logging costs: the same service with logging off, alive beside the measured one and
  // measured in turn with it (silent, production, production, silent), so drift over the run
  // weighs on both alike. Warmed up first (JIT).
  const silent = await startService({
    ...serviceEnv,
    LOG_LEVEL: 'silent',
    METRICS_PORT: String(await freePort()),
  });
  await run({ url: `${silent.base}/health/live`, duration: 3 });
  // The reference: bare Fastify on the same Node, the same body, measured in turn with the service.
  const bare = await startService({}, 'bench/bare-fastify.ts');
  await run({ url: `${bare.base}/health/live`, duration: 3 });
  const { proc, base } = await startService(serviceEnv);
  const rows: Row[] = [];
  // Processes started during the run (bare oidc-provider): stopped in the end whatever happened.
  const bareProcs: ChildProcess[] = [];
  try {
    // Accounts through the real routes: sign-up, code from the SMTP sink, confirmation, sign-in.
    const users: { email: string; access: string; refresh: string }[] = [];
    for (let i = 0; i < USERS; i++) {
      const email = `bench-${i}-${randomBytes(3).toString('hex')}@example.com`;
      const su = await post(base, '/api/v1/sign-ups', {
        identifierType: 'email',
        identifier: email,
        password,
      });
      if (su.status !== 201) throw new Error(`sign-up ${su.status}`);
      const code = sink.lastCode(email);
      const cf = await post(base, '/api/v1/sign-ups/confirmations', {
        identifierType: 'email',
        identifier: email,
        password,
        code,
      });
      if (cf.status !== 204) throw new Error(`confirmation ${cf.status}`);
      const si = await post(base, '/api/v1/sign-ins', {
        identifierType: 'email',
        identifier: email,
        password,
      });
      if (si.status !== 201) throw new Error(`sign-in ${si.status}`);
      users.push({ email, access: si.json.data.accessToken, refresh: si.json.data.refreshToken });
    }

    await run({ url: `${base}/health/live`, duration: 3 });
    // Alternating rounds (bare, service, silent, silent, service, bare), so drift over the run
    // weighs on each alike.
    const bareFirst = await runCosted(bare.proc, { url: `${bare.base}/health/live` });
    const floorFirst = await runCosted(proc, { url: `${base}/health/live` });
    const silentFirst = await runCosted(silent.proc, { url: `${silent.base}/health/live` });
    const silentSecond = await runCosted(silent.proc, { url: `${silent.base}/health/live` });
    const floorSecond = await runCosted(proc, { url: `${base}/health/live` });
    const bareSecond = await runCosted(bare.proc, { url: `${bare.base}/health/live` });
    for (const p of [silent.proc, bare.proc]) {
      p.kill('SIGTERM');
      await new Promise((r) => p.once('exit', r));
    }
    // Each floor is the mean of its two runs; p50 and p99 are those of its second.
    const mean = (a: { result: autocannon.Result }, b: { result: autocannon.Result }) =>
      (a.result.requests.average + b.result.requests.average) / 2;
    const floorRps = mean(floorFirst, floorSecond);
    const silentRps = mean(silentFirst, silentSecond);
    const bareRps = mean(bareFirst, bareSecond);
    const floorUs = (floorFirst.usPerRequest + floorSecond.usPerRequest) / 2;
    const silentUs = (silentFirst.usPerRequest + silentSecond.usPerRequest) / 2;
    const bareUs = (bareFirst.usPerRequest + bareSecond.usPerRequest) / 2;
    const both = (a: { result: autocannon.Result }, b: { result: autocannon.Result }) =>
      `mean of ${a.result.requests.average.toFixed(0)} and ${b.result.requests.average.toFixed(0)}`;
    rows.push({
      ...row(`GET /health/live (floor, LOG_LEVEL=${serviceConfig.logLevel})`, floorSecond.result, null),
      rps: floorRps,
      ratio: 1,
      note: `${both(floorFirst, floorSecond)}; service CPU ${floorUs.toFixed(1)} µs per request`,
    });
    rows.push({
      ...row('GET /health/live, bare Fastify (the reference: no logger, no hooks)', bareSecond.result, null),
      rps: bareRps,
      ratio: bareRps / floorRps,
      note: `${both(bareFirst, bareSecond)}; process CPU ${bareUs.toFixed(1)} µs per request; the service's floor is ${((floorRps / bareRps) * 100).toFixed(0)}% of it`,
    });
    rows.push({
      ...row('GET /health/live (LOG_LEVEL=silent)', silentSecond.result, null),
      rps: silentRps,
      ratio: silentRps / floorRps,
      note: `what logging costs; ${both(silentFirst, silentSecond)}; service CPU ${silentUs.toFixed(1)} µs per request`,
    });

    // The database floor and the bound of a route that does one HTTP answer and one read.
    const sessionIds = await (async () => {
      const c = new pg.Client({ connectionString: dbUrl });
      await c.connect();
      const r = await c.query('SELECT id FROM sessions');
      await c.end();
      return r.rows.map((x) => x.id as string);
    })();
    const dbFloor = await databaseFloor(dbUrl, sessionIds);
    const combinedBound = 1 / (1 / floorRps + 1 / dbFloor.rate);
    rows.push({
      scenario: `database floor: the session read's statement, prepared, ${CONNECTIONS} callers on the service's pool of 20, no HTTP`,
      rps: dbFloor.rate,
      p50: 0,
      p99: Math.round(dbFloor.p99 * 100) / 100,
      ratio: null,
      non2xx: 0,
      note: `combined bound 1/(1/${floorRps.toFixed(0)} + 1/${dbFloor.rate.toFixed(0)}) = ${combinedBound.toFixed(0)} req/s`,
    });

    let n = 0;
    const ctxRes = !want('context')
      ? null
      : await run({
          url: base,
          requests: [
            {
              method: 'GET',
              path: '/api/v1/session/context',
              setupRequest: (req) => {
                req.headers = { ...req.headers, authorization: `Bearer ${users[n++ % users.length].access}` };
                return req;
              },
            },
          ],
        });
    if (ctxRes)
      rows.push(
        row('GET /api/v1/session/context (Bearer)', ctxRes, floorRps, `${users.length} distinct tokens`),
      );

    // Each connection renews its own chain: the token of the previous answer is the next request.
    const pool = users.map((u) => u.refresh);
    // 50 chains, each renewed by one request at a time: a request takes a chain's current token
    // from the pool and its answer puts the next one back (autocannon's per-connection context is
    // reset whenever a connection wraps around its request list, so it cannot carry the chain).
    const renewal: autocannon.Request = {
      method: 'POST',
      path: '/api/v1/sign-ins/renewals',
      setupRequest: (req) => {
        req.headers = { ...req.headers, 'content-type': 'application/json' };
        req.body = JSON.stringify({ refreshToken: pool.shift() ?? 'exhausted' });
        return req;
      },
      onResponse: (status, body) => {
        if (status === 201) pool.push(JSON.parse(body).data.refreshToken);
      },
    };
    const renewRes = !want('renewals') ? null : await run({ url: base, requests: [renewal] });
    if (renewRes)
      rows.push(row('POST /api/v1/sign-ins/renewals (own chain per connection)', renewRes, floorRps));

    // The hash bound: what the cores can verify, measured in this run with the same parameters.
    const cores = os.availableParallelism();
    const hasher = createPasswordHasher({ memoryKiB: serviceConfig.argon2MemoryKiB, concurrency: cores });
    const h = await hasher.hash(password);
    const t0 = performance.now();
    const samples = 20;
    for (let i = 0; i < samples; i++) await hasher.verify(h, password);
    const verifyMs = (performance.now() - t0) / samples;
    const hashBound = (cores * 1000) / verifyMs;
    // The service runs ARGON2_CONCURRENCY verifications at once: its own bound.
    const gateBound = (serviceConfig.argon2Concurrency * 1000) / verifyMs;
    // What the cores actually verify when every one of them runs a chain (memory bandwidth and
    // page faults are shared, so this is below the bound on small machines).
    const tp = performance.now();
    await Promise.all(
      Array.from({ length: cores }, async () => {
        for (let i = 0; i < samples; i++) await hasher.verify(h, password);
      }),
    );
    const parallelRate = (cores * samples * 1000) / (performance.now() - tp);

    let m = 0;
    const signInOpts: autocannon.Options = {
      url: base,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/sign-ins',
          setupRequest: (req) => {
            req.headers = { ...req.headers, 'content-type': 'application/json' };
            req.body = JSON.stringify({
              identifierType: 'email',
              identifier: users[m++ % users.length].email,
              password,
            });
            return req;
          },
        },
      ],
    };
    // Health p99 while sign-ins saturate the hashing pool: the event loop must stay free.
    const [signInRes, healthDuring] = !want('sign-ins')
      ? [null, null]
      : await Promise.all([run(signInOpts), probe(`${base}/health/live`, { seconds: DURATION, rate: 100 })]);
    if (signInRes && healthDuring)
      rows.push(
        row(
          'POST /api/v1/sign-ins (password)',
          signInRes,
          floorRps,
          `2xx answers only; hash bound ${hashBound.toFixed(1)} req/s (${cores} cores ÷ ${verifyMs.toFixed(1)} ms verify): ${((signInRes['2xx'] / signInRes.duration / hashBound) * 100).toFixed(0)}% of it; ${cores} verify chains in parallel measured ${parallelRate.toFixed(1)}/s: ${((signInRes['2xx'] / signInRes.duration / parallelRate) * 100).toFixed(0)}% of that`,
          true,
        ),
        {
          scenario: 'GET /health/live during sign-in load (100 req/s, open loop)',
          rps: healthDuring.count / DURATION,
          p50: healthDuring.p50,
          p99: healthDuring.p99,
          ratio: null,
          non2xx: healthDuring.errors,
          note: `p99 is the figure; max ${healthDuring.max} ms; each latency from the moment its request was due (bench/probe.ts)`,
        },
      );

    let k = 0;
    const signUpRes = !want('sign-ups')
      ? null
      : await run({
          url: base,
          requests: [
            {
              method: 'POST',
              path: '/api/v1/sign-ups',
              setupRequest: (req) => {
                req.headers = { ...req.headers, 'content-type': 'application/json' };
                req.body = JSON.stringify({
                  identifierType: 'email',
                  identifier: `load-${k++}-${randomBytes(4).toString('hex')}@example.com`,
                  password,
                });
                return req;
              },
            },
          ],
        });
    if (signUpRes)
      rows.push(row('POST /api/v1/sign-ups (SMTP sink)', signUpRes, floorRps, '2xx answers only', true));

    // The OpenID Provider: one grant per connection, each by the code flow through its own hosted
    // session (a fresh sign-in, so the renewal chains above are not touched), before any load.
    const oidcScenarios = ['oidc-userinfo', 'oidc-introspection', 'oidc-refresh'].filter(want);
    const grants: OidcTokens[] = [];
    // DPoP-bound grants (RFC 9449) for their own userinfo scenario: one key per grant.
    const dpopGrants: { tokens: OidcTokens; key: DpopKey }[] = [];
    const signInAgain = async (u: (typeof users)[number]) => {
      for (let attempt = 0; ; attempt++) {
        const si = await post(base, '/api/v1/sign-ins', {
          identifierType: 'email',
          identifier: u.email,
          password,
        });
        if (si.status === 201) return si.json.data.refreshToken as string;
        // The hashing queue still full from the sign-up load (its 503 load shedding): wait it out.
        if (si.status !== 503 || attempt === 20) throw new Error(`sign-in ${si.status}`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    if (oidcScenarios.length > 0) {
      for (const u of users) {
        grants.push(await codeFlowGrant(base, serviceEnv.PUBLIC_ORIGIN, await signInAgain(u)));
      }
    }
    if (want('oidc-userinfo-dpop')) {
      for (const u of users) {
        const key = new DpopKey();
        const tokens = await codeFlowGrant(base, serviceEnv.PUBLIC_ORIGIN, await signInAgain(u), key);
        dpopGrants.push({ tokens, key });
      }
    }
    const basic = clientBasic();

    // The reference for the OpenID rows: bare oidc-provider (bench/bare-oidc.ts, the same library,
    // its in-memory adapter, the same client and token shapes), measured right after each of the
    // service's rows, so what the library costs and what the service adds are told apart.
    const bareOidc =
      oidcScenarios.length === 0
        ? null
        : await startService({ BENCH_CLIENT_SECRET: BENCH_CLIENT.secret }, 'bench/bare-oidc.ts');
    const bareGrants: OidcTokens[] = [];
    if (bareOidc) {
      bareProcs.push(bareOidc.proc);
      const minted = await fetch(`${bareOidc.base}/bench/grants?n=${grants.length}`);
      bareGrants.push(...((await minted.json()) as OidcTokens[]));
      await run({ url: `${bareOidc.base}/health/live`, duration: 2 });
    }
    /** The same scenario against bare oidc-provider, as the row after the service's. */
    const bareRow = async (
      scenario: string,
      requests: (grants: OidcTokens[]) => autocannon.Request[],
      note: string,
    ) => {
      if (!bareOidc) return;
      const measured = await runCosted(bareOidc.proc, { url: bareOidc.base, requests: requests(bareGrants) });
      rows.push(
        row(
          `${scenario}, bare oidc-provider (in-memory adapter)`,
          measured.result,
          floorRps,
          `${note}; process CPU ${measured.usPerRequest.toFixed(0)} µs per request`,
        ),
      );
    };

    // Userinfo with the opaque access tokens of the code exchanges (distinct, one per grant).
    const userinfoRequests = (of: OidcTokens[]): autocannon.Request[] => {
      let ui = 0;
      return [
        {
          method: 'GET',
          path: '/oidc/userinfo',
          setupRequest: (req) => {
            req.headers = { ...req.headers, authorization: `Bearer ${of[ui++ % of.length].accessToken}` };
            return req;
          },
        },
      ];
    };
    const userinfoRes = !want('oidc-userinfo')
      ? null
      : await runCosted(proc, { url: base, requests: userinfoRequests(grants) });
    if (userinfoRes) {
      rows.push(
        row(
          'GET /oidc/userinfo (opaque access token)',
          userinfoRes.result,
          floorRps,
          `${grants.length} distinct tokens; service CPU ${userinfoRes.usPerRequest.toFixed(0)} µs per request`,
        ),
      );
      await bareRow('GET /oidc/userinfo', userinfoRequests, `${bareGrants.length} distinct tokens`);
    }

    // Userinfo with DPoP-bound access tokens: every request carries a new proof (its own jti, the
    // token's hash, the server's nonce), which the provider checks and records against replay.
    let di = 0;
    const dpopUserinfoRes = !want('oidc-userinfo-dpop')
      ? null
      : await run({
          url: base,
          requests: [
            {
              method: 'GET',
              path: '/oidc/userinfo',
              setupRequest: (req) => {
                const { tokens, key } = dpopGrants[di++ % dpopGrants.length];
                req.headers = {
                  ...req.headers,
                  authorization: `DPoP ${tokens.accessToken}`,
                  dpop: key.proof('GET', `${base}/oidc/userinfo`, tokens.accessToken),
                };
                return req;
              },
            },
          ],
        });
    if (dpopUserinfoRes)
      rows.push(
        row(
          'GET /oidc/userinfo (DPoP-bound access token, a new proof each request)',
          dpopUserinfoRes,
          floorRps,
          `${dpopGrants.length} distinct tokens and keys; each proof's jti stored once`,
        ),
      );

    // Introspection by the client (client_secret_basic: the secret is checked on every request).
    let introspectedInactive = 0;
    const introspectionRequests = (of: OidcTokens[]): autocannon.Request[] => {
      let ii = 0;
      return [
        {
          method: 'POST',
          path: '/oidc/token/introspection',
          setupRequest: (req) => {
            req.headers = {
              ...req.headers,
              'content-type': 'application/x-www-form-urlencoded',
              authorization: basic,
            };
            req.body = new URLSearchParams({
              token: of[ii++ % of.length].accessToken,
              token_type_hint: 'access_token',
            }).toString();
            return req;
          },
          onResponse: (status, body) => {
            // An inactive answer is a 200 too: count it as the error it would be here.
            if (status === 200 && JSON.parse(body).active !== true) introspectedInactive++;
          },
        },
      ];
    };
    const introspectionRes = !want('oidc-introspection')
      ? null
      : await runCosted(proc, { url: base, requests: introspectionRequests(grants) });
    if (introspectionRes) {
      const r = introspectionRes.result;
      rows.push({
        ...row('POST /oidc/token/introspection (client_secret_basic)', r, floorRps),
        non2xx: r.non2xx + r.errors + r.timeouts + introspectedInactive,
        note: `${grants.length} distinct tokens; an inactive answer counts as an error; service CPU ${introspectionRes.usPerRequest.toFixed(0)} µs per request`,
      });
      introspectedInactive = 0;
      await bareRow(
        'POST /oidc/token/introspection (client_secret_basic)',
        introspectionRequests,
        `${bareGrants.length} distinct tokens`,
      );
      const bareIntrospection = rows.at(-1);
      if (bareOidc && bareIntrospection) bareIntrospection.non2xx += introspectedInactive;
    }

    // Refresh with rotation, as the renewals above: one chain per grant, each request presents the
    // chain's current refresh token and its answer puts the next one back (a token presented twice
    // would end its grant, so every measured request is an honest rotation). Each answer also
    // carries a new access token and an RS256-signed ID token.
    let refreshRefusedEarly = 0;
    const refreshRequests = (of: OidcTokens[]): autocannon.Request[] => {
      const chains = of.map((g) => g.refreshToken);
      return [
        {
          method: 'POST',
          path: '/oidc/token',
          setupRequest: (req, context) => {
            const token = chains.shift();
            (context as { token?: string }).token = token;
            req.headers = {
              ...req.headers,
              'content-type': 'application/x-www-form-urlencoded',
              authorization: basic,
            };
            req.body = new URLSearchParams({
              grant_type: 'refresh_token',
              refresh_token: token ?? 'exhausted',
            }).toString();
            return req;
          },
          onResponse: (status, body, context) => {
            if (status === 200) chains.push(JSON.parse(body).refresh_token);
            // Refused before the provider saw it (a rate limit): not spent.
            else {
              const token = (context as { token?: string }).token;
              if (status === 429 && token) {
                refreshRefusedEarly++;
                chains.push(token);
              }
            }
          },
        },
      ];
    };
    const refreshRes = !want('oidc-refresh')
      ? null
      : await runCosted(proc, { url: base, requests: refreshRequests(grants) });
    if (refreshRes) {
      rows.push(
        row(
          'POST /oidc/token (refresh_token grant, rotated: own chain per connection)',
          refreshRes.result,
          floorRps,
          `${grants.length} chains; each answer also signs an RS256 ID token; service CPU ${refreshRes.usPerRequest.toFixed(0)} µs per request${refreshRefusedEarly ? `; ${refreshRefusedEarly} answered 429 (refused before the provider saw it; token not spent, put back)` : ''}`,
        ),
      );
      await bareRow(
        'POST /oidc/token (refresh_token grant, rotated)',
        refreshRequests,
        `${bareGrants.length} chains; RS256 ID tokens`,
      );
    }
    if (bareOidc) {
      bareOidc.proc.kill('SIGTERM');
      await new Promise((r) => bareOidc.proc.once('exit', r));
    }

    // The device grant's poll (RFC 8628 3.4): a device that waits its interval gets
    // authorization_pending until a person approves. Each measured poll is a distinct device code's
    // first, so none is answered slow_down (a code polled again within 5 s is); the codes are made
    // by the device authorization endpoint before the load, as many as the polls.
    const deviceCodes: string[] = [];
    let pollsNotPending = 0;
    const devicePollRes = !want('oidc-device-poll')
      ? null
      : await (async () => {
          const made = await run({
            url: base,
            amount: DEVICE_CODES,
            requests: [
              {
                method: 'POST',
                path: '/oidc/device/auth',
                headers: { 'content-type': 'application/x-www-form-urlencoded' },
                body: new URLSearchParams({ client_id: BENCH_DEVICE_CLIENT, scope: 'openid' }).toString(),
                onResponse: (status, body) => {
                  if (status === 200) deviceCodes.push(JSON.parse(body).device_code);
                },
              },
            ],
          });
          if (deviceCodes.length < DEVICE_CODES) {
            throw new Error(
              `device authorizations: ${deviceCodes.length} of ${DEVICE_CODES} (${made.non2xx} refused)`,
            );
          }
          let pi = 0;
          return run({
            url: base,
            amount: deviceCodes.length,
            requests: [
              {
                method: 'POST',
                path: '/oidc/token',
                setupRequest: (req) => {
                  req.headers = { ...req.headers, 'content-type': 'application/x-www-form-urlencoded' };
                  req.body = new URLSearchParams({
                    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
                    device_code: deviceCodes[pi++ % deviceCodes.length],
                    client_id: BENCH_DEVICE_CLIENT,
                  }).toString();
                  return req;
                },
                onResponse: (status, body) => {
                  if (status !== 400 || JSON.parse(body).error !== 'authorization_pending') pollsNotPending++;
                },
              },
            ],
          });
        })();
    if (devicePollRes)
      rows.push({
        ...row(
          'POST /oidc/token (device_code grant: a poll answered authorization_pending)',
          devicePollRes,
          floorRps,
        ),
        // Every expected answer is a 400; anything else is the error.
        non2xx: pollsNotPending + devicePollRes.errors + devicePollRes.timeouts,
        note: `${deviceCodes.length} distinct device codes, each polled once (the poll's interval check is a write)`,
      });

    // Issue 44's rows (bench/events.ts): events' cost to sign-up and renewal, deliveries per second.
    const eventsBench = !want('events')
      ? null
      : await eventBench({
          serviceEnv,
          dbUrl,
          password,
          connections: CONNECTIONS,
          startService,
          run,
          lastCode: (to) => sink.lastCode(to),
          floorRps,
        });
    if (eventsBench) rows.push(...eventsBench.rows);

    const pgVersion = await (async () => {
      const c = new pg.Client({ connectionString: dbUrl });
      await c.connect();
      const r = await c.query('SHOW server_version');
      await c.end();
      return r.rows[0].server_version as string;
    })();
    const table = [
      '| Scenario | req/s | p50 ms | p99 ms | ratio to HTTP floor | ratio to combined bound | errors | note |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
      ...rows.map(
        (r) =>
          `| ${r.scenario} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.ratio === null ? '' : `${(r.ratio * 100).toFixed(0)}%`} | ${r.ratio === null || r.scenario.startsWith('GET /health') ? '' : `${((r.rps / combinedBound) * 100).toFixed(0)}%`} | ${r.non2xx} | ${r.note} |`,
      ),
    ].join('\n');
    const find = (prefix: string) => rows.find((r) => r.scenario.startsWith(prefix));
    const ctxRow = find('GET /api/v1/session/context');
    const renewRow = find('POST /api/v1/sign-ins/renewals');
    const signInRow = find('POST /api/v1/sign-ins (');
    const healthRow = find('GET /health/live during');
    if (!ctxRow || !renewRow || !signInRow || !healthRow) {
      const partial = eventsBench ? `\n${eventsBench.targets.join('\n')}\n` : '';
      process.stdout.write(`${table}\n${partial}(partial run: docs/performance.md not written)\n`);
      return;
    }
    const ctxShare = ctxRow.rps / combinedBound;
    // A target of one route's throughput as a share of another's, both from this run.
    const share = (target: string, measured: Row | undefined, of: Row, min: number) =>
      measured
        ? `| ${target} | ${((measured.rps / of.rps) * 100).toFixed(0)}% (${measured.rps.toFixed(0)} vs ${of.rps.toFixed(0)} req/s; p99 ${measured.p99} ms) | ${measured.rps / of.rps >= min ? 'met' : 'missed'} |`
        : `| ${target} | not measured in this run (BENCH_ONLY) | missed |`;
    const logCost = 1 - floorRps / silentRps;
    const logCpu = floorUs / silentUs - 1;
    const bareShare = floorRps / bareRps;
    const targets = [
      `| Floor (production defaults: log level info, metrics on) ≥ 0.8× bare Fastify in the same run | ${bareShare.toFixed(2)}× (${floorRps.toFixed(0)} vs ${bareRps.toFixed(0)} req/s); CPU per request ${floorUs.toFixed(1)} vs ${bareUs.toFixed(1)} µs | ${bareShare >= 0.8 ? 'met' : 'missed'} |`,
      `| Floor at the production log level loses ≤ 10% against \`LOG_LEVEL=silent\` | throughput ${(logCost * 100).toFixed(1)}% lower (${floorRps.toFixed(0)} vs ${silentRps.toFixed(0)} req/s); service CPU per request ${(logCpu * 100).toFixed(1)}% higher (${floorUs.toFixed(1)} vs ${silentUs.toFixed(1)} µs) | ${logCost <= 0.1 ? 'met' : logCpu <= 0.1 ? 'met by CPU per request; throughput within run-to-run noise' : 'missed'} |`,
      `| Session read ≥ 50% of the combined bound, p99 < 15 ms | ${(ctxShare * 100).toFixed(0)}% of ${combinedBound.toFixed(0)} req/s, p99 ${ctxRow.p99} ms | ${ctxShare >= 0.5 && ctxRow.p99 < 15 ? 'met' : 'missed'} |`,
      `| Renewals ≥ 2,500 req/s | ${renewRow.rps.toFixed(0)} req/s | ${renewRow.rps >= 2500 ? 'met' : 'missed'} |`,
      `| Password sign-in ≥ 85% of ARGON2_CONCURRENCY (${serviceConfig.argon2Concurrency}) ÷ verify time | ${((signInRow.rps / gateBound) * 100).toFixed(0)}% of ${gateBound.toFixed(1)} req/s | ${signInRow.rps / gateBound >= 0.85 ? 'met' : 'missed'} |`,
      `| Health p99 < 20 ms during sign-in load | ${healthRow.p99} ms | ${healthRow.p99 < 20 ? 'met' : 'missed'} |`,
      // Issue 43: the OpenID Provider's reads against the session read, its refresh against ours.
      share(
        'Userinfo (opaque token) ≥ 50% of the session read',
        find('GET /oidc/userinfo (opaque'),
        ctxRow,
        0.5,
      ),
      share('Introspection ≥ 50% of the session read', find('POST /oidc/token/introspection'), ctxRow, 0.5),
      share(
        'Refresh grant ≥ 25% of the renewal route',
        find('POST /oidc/token (refresh_token'),
        renewRow,
        0.25,
      ),
      ...(eventsBench?.targets ?? []),
    ].join('\n');
    const machine = `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${cores} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}, Node ${process.version}, PostgreSQL ${pgVersion}`;
    const doc = `# Performance

Produced by \`npm run bench\` (bench/run.ts) on ${new Date().toISOString().slice(0, 10)}.

Machine: ${machine}.

Method: the service runs as its own process with \`NODE_ENV=production\` on a fresh PostgreSQL
database (log level \`${serviceConfig.logLevel}\`, the production default unless BENCH_LOG_LEVEL says otherwise; rate
limits raised because one client drives all traffic);
autocannon runs in the benchmark process on the same machine, ${CONNECTIONS} connections, ${DURATION} s per
scenario. Ratios are to the bare \`GET /health/live\` floor measured in the same run, and to the
combined bound of that floor and the database floor (the session read's statement from
${CONNECTIONS} callers through the service's pool of 20 connections, prepared, no HTTP): a route that makes one HTTP answer and one read cannot beat
1/(1/HTTP floor + 1/database floor). The accounts
are made through the real routes (sign-up, the code read from a real SMTP sink, confirmation,
sign-in). Argon2id: m=${serviceConfig.argon2MemoryKiB} KiB, t=2, p=1 (the service's own hasher and default).
The OpenID Provider's scenarios use one first-party client (\`OIDC_CLIENTS\`, \`client_secret_basic\`) and one
grant per connection, each obtained before the load by the authorization code flow with PKCE through
its own hosted session (bench/oidc.ts); the refresh scenario rotates one chain per grant, so every
request presents the newest refresh token of its chain. The device-grant poll uses a public device
client (RFC 8628) and polls each of its device codes once, so every answer is \`authorization_pending\`.
Each OpenID row is followed by the same scenario against bare oidc-provider (bench/bare-oidc.ts: the
same library, its in-memory adapter, the same client and token shapes), with CPU per request of both.

${table}

## Targets (2-core machine)

| Target | Measured | |
|---|---|---|
${targets}

${readFileSync(join(ROOT, 'bench/analysis.md'), 'utf8')}`;
    writeFileSync(join(ROOT, 'docs/performance.md'), doc);
    process.stdout.write(`${doc}\n`);
  } finally {
    for (const p of [silent.proc, bare.proc, ...bareProcs])
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    await sink.close();
    await adminQuery(SERVER, `DROP DATABASE IF EXISTS ${dbName}`);
  }
}

await main();
