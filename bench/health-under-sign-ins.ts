/**
 * `npx tsx bench/health-under-sign-ins.ts`: the bench's "GET /health/live during sign-in load"
 * scenario alone, for before/after comparisons of one change. One fresh database and one set of
 * accounts; the service is started once per variant (HEALTH_VARIANTS, a JSON array of objects:
 * NAME names the row, the rest is environment) and the variants are measured in turn for
 * HEALTH_ROUNDS rounds, the order alternating, so drift on a shared machine weighs on all alike.
 * Each round: 50 connections of password sign-ins for HEALTH_SECONDS and GET /health/live at
 * 100 req/s, open loop (bench/probe.ts), as in bench/run.ts; it reports the health p50/p99/max, the sign-in
 * rate, the service's own event-loop delay over the round (perf_hooks, p99 and max, from the
 * service's metrics endpoint) and the CPU its main thread used per second of the round (/proc).
 * E.g. HEALTH_VARIANTS='[{"NAME":"nice 19"},{"NAME":"nice 0","ARGON2_NICE":"0"}]'; CHECKOUT in a
 * variant runs the service of another checkout (a before/after of one change in one run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { adminQuery } from '../test/helpers/database.js';
import { freePort } from '../test/helpers/net.js';
import { startSmtpSink } from '../test/helpers/smtp.js';
import { probe } from './probe.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.HEALTH_SECONDS ?? 10);
const ROUNDS = Number(process.env.HEALTH_ROUNDS ?? 2);
const USERS = 50;
const VARIANTS: Record<string, string>[] = JSON.parse(
  process.env.HEALTH_VARIANTS ?? '[{"NAME":"as configured"}]',
);

async function start(
  env: Record<string, string>,
  cwd = ROOT,
): Promise<{ proc: ChildProcess; base: string; metrics: string }> {
  const port = await freePort();
  const metricsPort = await freePort();
  const prof = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', '--cpu-prof-dir', join(ROOT, 'bench/profiles')]
    : [];
  const proc = spawn(process.execPath, [...prof, '--import', 'tsx', 'src/main.ts'], {
    cwd,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: String(metricsPort) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    try {
      if ((await fetch(`${base}/health/ready`)).status === 200)
        return { proc, base, metrics: `http://127.0.0.1:${metricsPort}/metrics` };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error('service did not become ready');
}

async function post(base: string, path: string, body: unknown) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return r.status;
}

function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) =>
    autocannon({ duration: SECONDS, connections: 50, ...opts }, (err, res) =>
      err ? reject(err) : resolve(res),
    ),
  );
}

/** CPU time (user + system) of the service's main thread (its event loop), in ms, from /proc. */
function mainThreadMs(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function lag(metrics: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(metrics)).text();
  const read = (name: string) =>
    Number(new RegExp(`^${name} ([0-9.e+-]+)`, 'm').exec(text)?.[1] ?? Number.NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

const dbName = `bench_${randomBytes(4).toString('hex')}`;
await adminQuery(SERVER, `CREATE DATABASE ${dbName}`);
const sink = await startSmtpSink();
const password = 'bench password that is long enough';
const env = {
  NODE_ENV: 'production',
  PUBLIC_ORIGIN: 'https://id.bench.example',
  SECRETS_KEY: randomBytes(32).toString('base64'),
  DATABASE_URL: SERVER.replace(/\/[^/]*$/, `/${dbName}`),
  SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
  MAIL_FROM: 'bench@example.com',
  RATE_LIMIT_SENDS_A_MESSAGE: '100000000/1',
  RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000000/1',
  RATE_LIMIT_PROVES_A_PASSWORD: '100000000/1',
};
const services: { name: string; proc: ChildProcess; base: string; metrics: string }[] = [];
try {
  for (const v of VARIANTS) {
    const { NAME, CHECKOUT, ...rest } = v;
    services.push({ name: NAME, ...(await start({ ...env, ...rest }, CHECKOUT ?? ROOT)) });
  }
  const emails: string[] = [];
  const base0 = services[0].base;
  for (let i = 0; i < USERS; i++) {
    const email = `health-${i}-${randomBytes(3).toString('hex')}@example.com`;
    if (
      (await post(base0, '/api/v1/sign-ups', { identifierType: 'email', identifier: email, password })) !==
      201
    )
      throw new Error('sign-up');
    const code = sink.lastCode(email);
    const st = await post(base0, '/api/v1/sign-ups/confirmations', {
      identifierType: 'email',
      identifier: email,
      password,
      code,
    });
    if (st !== 204) throw new Error(`confirmation ${st}`);
    emails.push(email);
  }
  process.stdout.write(
    '| Round | Variant | health p50 | p99 | max ms | sign-ins/s | loop delay p99 | max ms | event loop CPU ms/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n',
  );
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? services : [...services].reverse();
    for (const s of order) {
      let m = 0;
      await run({ url: `${s.base}/health/live`, duration: 2 });
      await lag(s.metrics); // the histogram restarts at each scrape: this one opens the round
      const cpuBefore = mainThreadMs(s.proc.pid);
      const [signIns, health] = await Promise.all([
        run({
          url: s.base,
          requests: [
            {
              method: 'POST',
              path: '/api/v1/sign-ins',
              setupRequest: (req) => {
                req.headers = { ...req.headers, 'content-type': 'application/json' };
                req.body = JSON.stringify({
                  identifierType: 'email',
                  identifier: emails[m++ % emails.length],
                  password,
                });
                return req;
              },
            },
          ],
        }),
        probe(`${s.base}/health/live`, { seconds: SECONDS, rate: 100 }),
      ]);
      const l = await lag(s.metrics);
      const loopCpu = (mainThreadMs(s.proc.pid) - cpuBefore) / SECONDS;
      process.stdout.write(
        `| ${round + 1} | ${s.name} | ${health.p50} | ${health.p99} | ${health.max} | ${signIns.requests.average.toFixed(1)} (${Object.entries(
          signIns.statusCodeStats ?? {},
        )
          .map(([k, v]) => `${k}: ${v.count}`)
          .join(', ')}) | ${l.p99.toFixed(1)} | ${l.max.toFixed(1)} | ${loopCpu.toFixed(0)} |\n`,
      );
    }
  }
} finally {
  for (const s of services) {
    s.proc.kill('SIGTERM');
    await new Promise((r) => s.proc.once('exit', r));
  }
  await sink.close();
  await adminQuery(SERVER, `DROP DATABASE IF EXISTS ${dbName}`);
}
