import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { seedDataDir } from '../helpers/database.js';
import { freePort } from '../helpers/net.js';
import { type Spawned, spawnTs, tryConnect, waitFor, within } from './support.js';

let running: Spawned | undefined;

afterEach(() => {
  // Only our own child, by its handle; normally it has already exited.
  if (running && running.child.exitCode === null && running.child.signalCode === null)
    running.child.kill('SIGKILL');
  running = undefined;
});

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function waitForLive(proc: Spawned, port: number) {
  return waitFor(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`exited early: ${proc.stderr()}`);
      const r = await get(port, '/health/live');
      return r.status === 200 ? r : undefined;
    },
    30_000,
    '/health/live to answer',
    100,
  );
}

/**
 * The embedded database on disk, already migrated (the snapshot the PGlite tests start from): the
 * subject here is the shutdown, and a child that runs initdb and every migration first (as
 * `memory://` does) spends most of the file's time there.
 */
async function seededDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'idsvc-shutdown-'));
  await seedDataDir(dir);
  return dir;
}

describe('graceful shutdown of src/main.ts', () => {
  const dirs: string[] = [];
  beforeAll(async () => {
    dirs.push(await seededDir(), await seededDir());
  });

  it('on SIGTERM finishes the request in flight, refuses new connections and exits 0', async () => {
    const port = await freePort();
    running = spawnTs('src/main.ts', {
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dirs.shift()!,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      // The arrival of each request is a debug line (the access line comes with the answer).
      LOG_LEVEL: 'debug',
    });
    const proc = running;

    await waitForLive(proc, port);

    // A request the server has started handling when the signal arrives.
    const before = proc.stdout().length;
    const inFlight = get(port, '/health/ready');
    await waitFor(
      () =>
        /"incoming request".*"route":"\/health\/ready"|"route":"\/health\/ready".*"incoming request"/.test(
          proc.stdout().slice(before),
        )
          ? true
          : undefined,
      10_000,
      'the server to receive the request',
      5,
    );
    proc.child.kill('SIGTERM');

    const answered = await within(inFlight, 10_000, 'the in-flight request');
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body).status).toBe('ok');

    const { code, signal } = await within(proc.exited, 15_000, 'the process to exit');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(proc.stdout()).toContain('shutting down');
    expect(proc.stderr()).toBe('');
    expect(await tryConnect(port)).toBe('ECONNREFUSED');
  });

  it('exits 0 on a SIGTERM sent as soon as the port opens, and closes the listener', async () => {
    const port = await freePort();
    running = spawnTs('src/main.ts', {
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dirs.shift()!,
      SECRETS_KEY: randomBytes(32).toString('base64'),
    });
    const proc = running;
    // The signal comes the moment the port accepts connections: the shutdown must be graceful
    // from then on, not Node's default action for SIGTERM.
    await waitFor(
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`exited early: ${proc.stderr()}`);
        return (await tryConnect(port)) === 'connected' ? true : undefined;
      },
      30_000,
      'the listener',
      2,
    );
    proc.child.kill('SIGTERM');
    const { code, signal } = await within(proc.exited, 15_000, 'the process to exit');
    expect({ code, signal, stderr: proc.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(await tryConnect(port)).toBe('ECONNREFUSED');
  });
});
