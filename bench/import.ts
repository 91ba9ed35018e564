// npm run bench:import [-- LINES]: generates LINES identities (100,000 unless told) as NDJSON, then
// imports them with `npm run users:import` into a fresh database on the PostgreSQL server
// (BENCH_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres), sampling the importer's
// resident memory every half second. Prints the rate, the peak memory and the machine's load; the
// figures go in docs/performance.md, "Import".
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { adminQuery } from '../test/helpers/database.js';

const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LINES = Number(process.argv[2] ?? 100_000);

async function generate(path: string): Promise<void> {
  // Hashes are stored as given, never computed at import: a handful of real bcrypt hashes, reused.
  const hashes = Array.from({ length: 8 }, (_, i) => bcrypt.hashSync(`password ${i}`, 10));
  const out = createWriteStream(path);
  const run = randomBytes(3).toString('hex');
  for (let n = 0; n < LINES; n++) {
    const line = {
      externalId: `src|${run}|${n}`,
      createdAt: new Date(Date.UTC(2020, 0, 1) + n * 1000).toISOString(),
      identifiers: [{ type: 'email', value: `user${n}.${run}@example.com`, verified: n % 10 !== 0 }],
      password: hashes[n % hashes.length],
      givenName: `Given${n}`,
      familyName: 'Family',
      ...(n % 10 === 1 ? { totp: { secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP' } } : {}),
      ...(n % 10 === 2
        ? { providerLinks: [{ provider: 'https://accounts.google.com', subject: `g${n}.${run}` }] }
        : {}),
    };
    if (!out.write(`${JSON.stringify(line)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve) => out.end(resolve));
}

function rssKiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
  const path = join(dir, 'users.ndjson');
  await generate(path);
  const dbName = `bench_import_${randomBytes(4).toString('hex')}`;
  await adminQuery(SERVER, `CREATE DATABASE ${dbName}`);
  try {
    const env = {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: SERVER.replace(/\/[^/]*$/, `/${dbName}`),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
    };
    // Migrated first, so the timing below is the import alone.
    await new Promise<void>((resolve, reject) => {
      const m = spawn('npx', ['tsx', 'src/migrate.ts'], { env, stdio: 'ignore' });
      m.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`migrate exited ${code}`))));
    });
    const load = loadavg();
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/users-import.ts', path], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const samples: number[] = [];
    const timer = setInterval(() => samples.push(rssKiB(child.pid!)), 500);
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', () => {});
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearInterval(timer);
    const seconds = (performance.now() - started) / 1000;
    const live = samples.filter((s) => s > 0);
    const quarter = live.slice(0, Math.max(1, Math.floor(live.length / 4)));
    console.log(output.trim());
    console.log(
      [
        `exit ${code}`,
        `${LINES} identities in ${seconds.toFixed(1)} s: ${Math.round(LINES / seconds)} identities/s (process start and migration check included)`,
        `importer RSS: peak ${Math.round(Math.max(...live) / 1024)} MiB, peak of the first quarter ${Math.round(Math.max(...quarter) / 1024)} MiB`,
        `load average before the run: ${load.map((l) => l.toFixed(2)).join(' ')}; after: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      ].join('\n'),
    );
  } finally {
    await adminQuery(SERVER, `DROP DATABASE IF EXISTS ${dbName}`);
  }
}

await main();
