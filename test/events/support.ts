import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { WebhookWorker, type WebhookWorkerOptions } from '../../src/features/events/webhooks/worker.js';
import { ADMIN_KEY } from '../helpers/admin.js';
import type { TestApp } from '../helpers/app.js';

/** One request a sink received. */
export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  url: string;
}

/** What the sink answers: a status, headers, and optionally a wait before answering. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** A real HTTP receiver on loopback; answers from `answer` (200 by default). */
export interface Sink {
  url: string;
  port: number;
  received: Received[];
  answer: (r: Received) => Answer;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  const sink = {
    received: [] as Received[],
    answer: (_r: Received): Answer => ({ status: 200 }),
  } as Sink;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), url: req.url ?? '' };
      sink.received.push(r);
      const a = sink.answer(r);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(a.status, a.headers ?? {});
        res.end('ok');
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  sink.port = port;
  sink.url = `http://127.0.0.1:${port}/hooks`;
  sink.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return sink;
}

/** One request to the admin listener with the `ops` key and a JSON body. */
export function admin(
  t: TestApp,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: unknown,
): Promise<LightMyRequestResponse> {
  return t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
}

/** A new endpoint; its body as answered (with the secret). */
export async function createEndpoint(t: TestApp, body: Record<string, unknown>) {
  const res = await admin(t, 'POST', '/webhook-endpoints', body);
  if (res.statusCode !== 201) throw new Error(`endpoint: ${res.statusCode} ${res.body}`);
  return res.json().data as {
    id: string;
    secret: string;
    ed25519PublicKey: string | null;
    url: string;
  };
}

/** A worker driven round by round: no jitter (the middle of its spread) unless asked. */
export function worker(t: TestApp, opts: WebhookWorkerOptions = {}): WebhookWorker {
  return new WebhookWorker(t.ctx, { random: () => 0.5, ...opts });
}

export async function deliveriesOf(t: TestApp, endpointId: string) {
  const r = await sql<{
    id: string;
    status: string;
    attempts: number;
    due_at: Date;
    lease_id: string | null;
    last_status_code: number | null;
    last_error: string | null;
  }>`SELECT id, status, attempts, due_at, lease_id, last_status_code, last_error
     FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY created_at, id`.execute(
    t.ctx.database.db,
  );
  return r.rows;
}

export async function eventCount(t: TestApp, type?: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM events WHERE ${type === undefined ? sql`TRUE` : sql`type = ${type}`}`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].n;
}
