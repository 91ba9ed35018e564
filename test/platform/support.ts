import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (cwd of spawned service processes). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A minimal environment for a child process: nothing inherited from the test run's database set-up. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'SYSTEMROOT']) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  return { ...env, ...extra };
}

export interface Spawned {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `node --import tsx <script>` from the repository root with exactly `env`. */
export function spawnTs(script: string, env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Rejects if `p` has not settled within `ms`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  what: string,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ''}`,
      );
    }
    await delay(intervalMs);
  }
}

/** Resolves with the connect error code (e.g. ECONNREFUSED), or 'connected' if a connection opened. */
export function tryConnect(port: number, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

/**
 * A TCP proxy on loopback the test can take down (every connection cut, listener closed) and bring
 * back on the same port, to simulate a database outage without touching the database.
 */
export class TcpProxy {
  #server: net.Server | undefined;
  #sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    readonly targetHost: string,
    readonly targetPort: number,
  ) {}

  /** Starts listening (on the same port as before after a stop); a no-op while running. */
  async start(): Promise<void> {
    if (this.#server) return;
    const server = net.createServer((client) => {
      const upstream = net.connect({ host: this.targetHost, port: this.targetPort });
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
      }
      const cut = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', cut);
      upstream.on('error', cut);
      client.on('close', cut);
      upstream.on('close', cut);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }
}
