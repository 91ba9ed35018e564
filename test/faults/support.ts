import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { expect } from 'vitest';
import { adminQuery, SERVER_URL } from '../helpers/database.js';

/** A fresh PostgreSQL database on the test server (for spawned processes, which take no schema option). */
export async function createFreshDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(SERVER_URL, `CREATE DATABASE ${name}`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => adminQuery(SERVER_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** How one HTTP exchange ended, as seen from the client's socket. */
export type Outcome =
  | { kind: 'answer'; status: number; headers: http.IncomingHttpHeaders; body: string }
  /** Nothing came back: the connection was refused or closed before a byte of the answer. */
  | { kind: 'no-answer'; code: string }
  /** The status line arrived but the body did not complete: a request cut mid-response. */
  | { kind: 'cut'; code: string; status: number };

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Source address on loopback (any 127.x.y.z on Linux): the service sees it as the client address. */
  localAddress?: string;
  agent?: http.Agent | false;
  timeoutMs?: number;
}

/** One request with node:http, classifying how it ended (never rejects). */
export function call(port: number, path: string, opts: CallOptions = {}): Promise<Outcome> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve) => {
    let settled = false;
    let status = 0;
    const done = (o: Outcome) => {
      if (!settled) {
        settled = true;
        resolve(o);
      }
    };
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? (payload === undefined ? 'GET' : 'POST'),
        agent: opts.agent ?? false,
        localAddress: opts.localAddress,
        headers: {
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
          ...opts.headers,
        },
        timeout: opts.timeoutMs ?? 20_000,
      },
      (res) => {
        status = res.statusCode ?? 0;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => {
          if (res.complete) done({ kind: 'answer', status, headers: res.headers, body });
          else done({ kind: 'cut', code: 'incomplete', status });
        });
        res.on('aborted', () => done({ kind: 'cut', code: 'aborted', status }));
        res.on('error', (err: NodeJS.ErrnoException) =>
          done({ kind: 'cut', code: err.code ?? 'error', status }),
        );
        res.on('close', () => {
          if (!res.complete) done({ kind: 'cut', code: 'closed', status });
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })),
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (status !== 0) done({ kind: 'cut', code: err.code ?? 'error', status });
      else done({ kind: 'no-answer', code: err.code ?? 'error' });
    });
    req.end(payload);
  });
}

/** The answer of an outcome that must have one. */
export function answered(o: Outcome): Extract<Outcome, { kind: 'answer' }> {
  if (o.kind !== 'answer') throw new Error(`expected an HTTP answer, got ${JSON.stringify(o)}`);
  return o;
}

/** The 503 every dependency outage answers (contract 4): Problem Details, Retry-After, retryable. */
export function expectUnavailable(o: Extract<Outcome, { kind: 'answer' }>, what: string): void {
  expect(o.status, what).toBe(503);
  expect(o.headers['content-type'], what).toMatch(/^application\/problem\+json/);
  expect(o.headers['retry-after'], what).toMatch(/^\d+$/);
  const body = JSON.parse(o.body);
  expect(body, what).toMatchObject({
    type: '/problems/service.unavailable',
    status: 503,
    code: 'service.unavailable',
    retryable: true,
  });
  expect(typeof body.title, what).toBe('string');
  expect(typeof body.detail, what).toBe('string');
}

/** Nothing internal or secret in an answer: no SQL, no stack frame, and none of `secrets`. */
export function expectNothingLeaked(
  o: Extract<Outcome, { kind: 'answer' }>,
  secrets: string[],
  what: string,
) {
  const text = `${JSON.stringify(o.headers)}\n${o.body}`;
  expect(text, what).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE)\b/);
  expect(text, what).not.toContain('    at ');
  expect(text, what).not.toMatch(/postgres(ql)?:\/\//);
  for (const s of secrets) expect(text.includes(s), `${what}: leaks a secret`).toBe(false);
}

/** A random loopback source address, so this run's rate-limit keys are its own. */
export function randomLoopback(): string {
  const b = randomBytes(3);
  return `127.${1 + (b[0] % 250)}.${b[1]}.${1 + (b[2] % 250)}`;
}
