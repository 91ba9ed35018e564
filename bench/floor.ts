/**
 * `npm run bench:floor`: the request floor alone, in alternating rounds (docs/performance.md,
 * "Against bare Fastify"). The service at the production defaults (NODE_ENV=production, log level
 * info, metrics on; each service on a fresh database of the PostgreSQL server, FLOOR_DATABASE_URL,
 * as in production: GET /health/live reads none, but the embedded database, in the service's own
 * process, cost 1.5 to 2.8 µs of CPU per answer beside it, in its heap and its collections), the
 * same service with LOG_LEVEL=silent, and bare Fastify (bench/bare-fastify.ts) are all started,
 * then measured in turn for FLOOR_ROUNDS rounds of FLOOR_SECONDS each, the order rotating every
 * round so drift over the run weighs on all alike. Each round gives req/s and the process's own
 * CPU time per request (utime + stime from /proc/<pid>/stat), which moves less than throughput
 * when the machine is busy.
 *
 * FLOOR_PIN=1 puts the servers on one CPU and the load generator on the other (below).
 *
 * FLOOR_COMPARE=<path of another checkout> adds that checkout's service at the same settings (a
 * before/after of one change, measured in one run). FLOOR_VARIANTS adds this checkout's service
 * with other environments (a JSON array of objects: NAME names the row, the rest is environment).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { adminQuery } from '../test/helpers/database.js';
import { freePort } from '../test/helpers/net.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.env.FLOOR_ROUNDS ?? 6);
const SECONDS = Number(process.env.FLOOR_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const TICKS_PER_SECOND = 100;
/**
 * FLOOR_PIN=1: each server on CPU 0 and the load generator (this process) on CPU 1 (needs `taskset`
 * and two CPUs). Each server's threads then share one core with nothing else, so its CPU time per
 * request compares two builds with less spread; the ratios are lower than unpinned, since an
 * unpinned service's helper threads (the log writes, the garbage collector) borrow the other core
 * (docs/performance.md).
 */
const SERVER_CPU = '0';
const PIN = process.env.FLOOR_PIN === '1' && availableParallelism() >= 2 && hasTaskset();
function hasTaskset(): boolean {
  return spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }).status === 0;
}
/** FLOOR_RATE=<req/s>: every target at this fixed rate, not saturated; compare the CPU per request. */
const RATE = Number(process.env.FLOOR_RATE ?? 0);
const SERVER = process.env.FLOOR_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The databases made for this run's services, dropped at the end. */
const databases: string[] = [];

/** A fresh database for one service (each keeps its own key check and audit chain). */
async function freshDatabase(): Promise<string> {
  const name = `floor_${randomBytes(4).toString('hex')}`;
  await adminQuery(SERVER, `CREATE DATABASE ${name}`);
  databases.push(name);
  return SERVER.replace(/\/[^/]*$/, `/${name}`);
}

interface Target {
  name: string;
  proc: ChildProcess;
  url: string;
  rates: number[];
  cpu: number[];
}

async function start(
  name: string,
  root: string,
  entry: string,
  env: Record<string, string>,
): Promise<Target> {
  const port = await freePort();
  const [command, args] = PIN
    ? ['taskset', ['-c', SERVER_CPU, process.execPath, '--import', 'tsx', entry]]
    : [process.execPath, ['--import', 'tsx', entry]];
  const proc = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}/health/live`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).status === 200) return { name, proc, url, rates: [], cpu: [] };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error(`${name} did not start`);
}

/** The process's user + system CPU time in seconds (fields 14 and 15 of /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

async function round(t: Target, seconds: number): Promise<{ rate: number; cpuMicros: number }> {
  const before = cpuSeconds(t.proc.pid as number);
  const r = await autocannon({
    url: t.url,
    connections: CONNECTIONS,
    duration: seconds,
    ...(RATE ? { overallRate: RATE } : {}),
  });
  const used = cpuSeconds(t.proc.pid as number) - before;
  if (r.non2xx + r.errors + r.timeouts > 0)
    throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rate: r.requests.average, cpuMicros: (used * 1e6) / r.requests.total };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
  if (PIN) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
  process.stdout.write(
    PIN ? 'servers on CPU 0, load generator on CPU 1\n' : 'not pinned to CPUs (FLOOR_PIN=1 pins them)\n',
  );
  const env = {
    NODE_ENV: 'production',
    PUBLIC_ORIGIN: 'https://id.bench.example',
    SECRETS_KEY: randomBytes(32).toString('base64'),
  };
  /** A service at the production defaults, with `overrides` on top, on its own fresh database. */
  const service = async (name: string, root: string, overrides: Record<string, string> = {}) =>
    start(name, root, 'src/main.ts', {
      ...env,
      DATABASE_URL: await freshDatabase(),
      METRICS_PORT: String(await freePort()),
      ...overrides,
    });
  const targets: Target[] = [];
  try {
    targets.push(await start('bare Fastify', ROOT, 'bench/bare-fastify.ts', {}));
    targets.push(await service('service (info, metrics on)', ROOT));
    targets.push(await service('service (silent, metrics on)', ROOT, { LOG_LEVEL: 'silent' }));
    // FLOOR_VARIANTS='[{"NAME":"x","SOME_VAR":"1"}]': more services at the production defaults,
    // each with its own environment on top (a setting's cost, measured in the same run).
    for (const variant of JSON.parse(process.env.FLOOR_VARIANTS ?? '[]') as Record<string, string>[]) {
      const { NAME, ...overrides } = variant;
      targets.push(await service(`service (info, ${NAME})`, ROOT, overrides));
    }
    if (process.env.FLOOR_COMPARE) {
      targets.push(await service('compared checkout (info, metrics on)', resolve(process.env.FLOOR_COMPARE)));
    }
    // Warm-up (JIT), not counted.
    for (const t of targets) await round(t, 2);
    for (let i = 0; i < ROUNDS; i++) {
      const order = targets.map((_, k) => targets[(k + i) % targets.length]);
      for (const t of order) {
        const { rate, cpuMicros } = await round(t, SECONDS);
        t.rates.push(rate);
        t.cpu.push(cpuMicros);
      }
    }
    const bare = targets[0];
    process.stdout.write(
      `| Target | req/s (median of ${ROUNDS}) | ratio to bare (median of per-round ratios) | CPU µs per request (median) |\n|---|---:|---:|---:|\n`,
    );
    for (const t of targets) {
      const ratios = t.rates.map((r, k) => r / bare.rates[k]);
      process.stdout.write(
        `| ${t.name} | ${Math.round(median(t.rates))} | ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | ${median(t.cpu).toFixed(1)} |\n`,
      );
    }
  } finally {
    for (const t of targets) {
      if (t.proc.exitCode !== null || t.proc.signalCode !== null) continue;
      const exited = new Promise((r) => t.proc.once('exit', r));
      t.proc.kill('SIGTERM');
      await exited;
    }
    for (const name of databases) await adminQuery(SERVER, `DROP DATABASE IF EXISTS ${name}`);
  }
}

await main();
