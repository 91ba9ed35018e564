import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { answered, call, createFreshDatabase } from '../faults/support.js';
import { freePort } from '../helpers/net.js';
import { lastCode } from '../helpers/outbox.js';
import { type Spawned, spawnTs, waitFor, within } from './support.js';

/**
 * Issue 12 item 5: with OTEL_EXPORTER_OTLP_ENDPOINT set, src/main.ts exports its spans over
 * OTLP/HTTP. A receiver on loopback collects what a real process sends; a sign-in must come out as
 * one trace (the HTTP server span, Fastify's spans, the pg statements beneath them), carry its
 * request id, and hold no password, code, token or query value in any attribute.
 */

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
}
interface OtlpExport {
  resourceSpans?: { scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[] }[];
}

const SPAN_KIND_SERVER = 2;

function plainValue(v: OtlpValue): unknown {
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plainValue);
  return v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
}

function attributes(span: OtlpSpan): Record<string, unknown> {
  return Object.fromEntries((span.attributes ?? []).map((a) => [a.key, plainValue(a.value)]));
}

/** An OTLP/HTTP (JSON) trace receiver on loopback: every POST /v1/traces body, as received. */
async function startReceiver() {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    spans(): OtlpSpan[] {
      return bodies.flatMap((b) =>
        ((JSON.parse(b) as OtlpExport).resourceSpans ?? []).flatMap((r) =>
          (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []),
        ),
      );
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let running: Spawned | undefined;
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  if (running && running.child.exitCode === null && running.child.signalCode === null)
    running.child.kill('SIGKILL');
  running = undefined;
  for (const c of cleanups.splice(0)) await c();
});

describe('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('exports a sign-in as one trace: HTTP span with its request id, Fastify and pg spans, no secrets', async () => {
    const receiver = await startReceiver();
    cleanups.push(receiver.close);
    const database = await createFreshDatabase();
    cleanups.push(database.drop);
    const dataDir = mkdtempSync(join(tmpdir(), 'idsvc-trace-'));
    const port = await freePort();
    running = spawnTs('src/main.ts', {
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      ARGON2_MEMORY_KIB: '1024',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'identity-under-test',
    });
    const proc = running;
    await waitFor(
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`exited: ${proc.stderr()}`);
        const o = await call(port, '/health/ready');
        return o.kind === 'answer' && o.status === 200 ? true : undefined;
      },
      40_000,
      'the service to be ready',
      100,
    );

    const address = `trace-${randomBytes(4).toString('hex')}@example.com`;
    const password = `trace-${randomBytes(12).toString('hex')}`;
    const form = { identifierType: 'email', identifier: address };
    // A user agent of its own, so its absence from what is exported means something.
    const userAgent = `TraceProbe/${randomBytes(6).toString('hex')}`;
    const post = async (path: string, body: unknown) =>
      answered(
        await call(port, `/api/v1${path}`, { method: 'POST', body, headers: { 'user-agent': userAgent } }),
      );
    expect((await post('/sign-ups', { ...form, password })).status).toBe(201);
    const code = lastCode(dataDir, address);
    expect((await post('/sign-ups/confirmations', { ...form, password, code })).status).toBe(204);
    // A query parameter on the sign-in: its value must not reach the collector.
    const probe = randomBytes(12).toString('hex');
    const signIn = await post(`/sign-ins?probe=${probe}`, { ...form, password });
    expect(signIn.status, signIn.body).toBe(201);
    const grant = JSON.parse(signIn.body).data as { accessToken: string; refreshToken: string };
    const requestId = signIn.headers['x-request-id'];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    // A graceful stop exports what the batch still holds.
    proc.child.kill('SIGTERM');
    const exit = await within(proc.exited, 15_000, 'the process to exit');
    expect({ ...exit, stderr: proc.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });

    const spans = receiver.spans();
    const server = spans.filter(
      (s) => s.kind === SPAN_KIND_SERVER && attributes(s)['http.response.header.x-request-id'] !== undefined,
    );
    const signInSpan = server.find((s) => {
      const a = attributes(s);
      return (a['http.response.header.x-request-id'] as string[])[0] === requestId && !s.parentSpanId;
    });
    expect(signInSpan, JSON.stringify(server.map((s) => [s.name, attributes(s)]))).toBeDefined();
    const root = signInSpan as OtlpSpan;
    const a = attributes(root);
    expect(a['http.route'] ?? a['http.target'] ?? a['url.path']).toMatch(/^\/api\/v1\/sign-ins$/);

    // One trace: every span of the request (carrying its request id) shares the root's trace id,
    // and the trace holds Fastify's request span and the pg statements of the sign-in.
    const trace = spans.filter((s) => s.traceId === root.traceId);
    const ofRequest = spans.filter((s) => {
      const id = attributes(s)['http.response.header.x-request-id'] as string[] | undefined;
      return id?.[0] === requestId;
    });
    expect(ofRequest.length).toBeGreaterThanOrEqual(2);
    for (const s of ofRequest) expect(s.traceId).toBe(root.traceId);
    expect(trace.filter((s) => !s.parentSpanId)).toEqual([root]);
    const ids = new Set(trace.map((s) => s.spanId));
    for (const s of trace) if (s !== root) expect(ids.has(s.parentSpanId as string)).toBe(true);
    const db = trace.filter((s) => {
      const x = attributes(s);
      return x['db.system'] === 'postgresql' || x['db.system.name'] === 'postgresql';
    });
    expect(db.length).toBeGreaterThanOrEqual(3);
    for (const s of db) {
      const statement = (attributes(s)['db.statement'] ?? attributes(s)['db.query.text']) as
        | string
        | undefined;
      if (statement !== undefined) expect(statement).not.toContain(address);
    }

    // Other requests (the sign-up, the confirmation) are traces of their own.
    expect(new Set(server.map((s) => s.traceId)).size).toBe(server.length);

    // Nothing secret anywhere in what was exported: not the password, the code, the tokens or the
    // query value; the address is not recorded either (statements carry placeholders).
    const exported = receiver.bodies.join('\n');
    expect(exported).toContain('identity-under-test');
    for (const secret of [password, code, grant.accessToken, grant.refreshToken, probe, address, userAgent]) {
      expect(exported).not.toContain(secret);
    }
    // Who the client is stays out of every span: no address or user-agent attribute, whichever
    // semantic-convention version an instrumentation speaks.
    const personal = [
      'client.address',
      'network.peer.address',
      'net.peer.ip',
      'net.sock.peer.addr',
      'http.client_ip',
      'user_agent.original',
      'http.user_agent',
    ];
    for (const span of server) {
      for (const key of personal) expect(attributes(span), `${span.name} ${key}`).not.toHaveProperty(key);
    }
  }, 90_000);

  it('off (no endpoint): nothing of the SDK is loaded and no tracer is registered', async () => {
    const { startTracing } = await import('../../src/platform/trace/tracing.js');
    await startTracing({});
    // The API registers its globals under this symbol when an SDK installs a provider.
    const registered = Object.getOwnPropertySymbols(globalThis).filter((s) =>
      String(s).includes('opentelemetry'),
    );
    expect(registered).toEqual([]);
    const loaded = Object.keys((await import('node:module')).createRequire(import.meta.url).cache);
    expect(loaded.filter((path) => path.includes('@opentelemetry/sdk-'))).toEqual([]);
  });

  it('a collector URL that is not http(s) stops start-up with one line naming the variable', async () => {
    running = spawnTs('src/main.ts', {
      NODE_ENV: 'test',
      PORT: String(await freePort()),
      DATABASE_URL: 'memory://',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'idsvc-trace-')),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
    });
    const exit = await within(running.exited, 30_000, 'the process to exit');
    expect(exit.code).toBe(1);
    expect(running.stderr().trim().split('\n')).toEqual([
      'invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be the http:// or https:// URL of an OTLP/HTTP collector',
    ]);
  }, 40_000);
});
