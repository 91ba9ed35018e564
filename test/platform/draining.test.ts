import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { tryConnect, UUID_RE, waitFor, within } from './support.js';

let t: TestApp | undefined;
const sockets: net.Socket[] = [];

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await t?.app.close();
  await t?.db.drop();
});

/** An answer read off a raw connection: status, headers (lower-case names) and body. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The first answer the server sends on `socket` (its body as long as its Content-Length says), and
 * when the server closes the connection.
 */
function readAnswer(socket: net.Socket): { answer: Promise<RawAnswer>; closed: Promise<void> } {
  socket.setEncoding('latin1');
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    let text = '';
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = text.slice(end + 4);
      if (body.length < Number(headers['content-length'] ?? 0)) return;
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
  return { answer, closed };
}

describe('draining at shutdown', () => {
  it('closes the connection of every answer sent while draining, a path the router refuses included', async () => {
    t = await createTestApp();
    const app = t.app;
    const serverSides: net.Socket[] = [];
    app.server.on('connection', (socket: net.Socket) => serverSides.push(socket));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;

    // Two keep-alive connections whose requests have begun arriving when the shutdown starts, so
    // neither is idle and reaped: a route's request, and a malformed percent-encoding that the
    // router refuses before any hook runs (Fastify's frameworkErrors).
    const starts = {
      routed: 'GET /health/live HTTP/1.1\r\nHost: localhost\r\n',
      refused: 'GET /api/v1/%E0%A4%A HTTP/1.1\r\nHost: localhost\r\n',
    };
    const routed = net.connect(port, '127.0.0.1');
    const refused = net.connect(port, '127.0.0.1');
    sockets.push(routed, refused);
    const reads = [readAnswer(routed), readAnswer(refused)];
    routed.write(starts.routed);
    refused.write(starts.refused);
    const total = starts.routed.length + starts.refused.length;
    await waitFor(
      () => (serverSides.reduce((sum, s) => sum + s.bytesRead, 0) >= total ? true : undefined),
      5_000,
      'the server to read both requests begun',
      2,
    );

    const closing = app.close();
    // The listener closes once the preClose hooks have run: from then on the server drains.
    await waitFor(
      async () => ((await tryConnect(port)) === 'ECONNREFUSED' ? true : undefined),
      5_000,
      'the listener to close',
      2,
    );
    routed.write('\r\n');
    refused.write('\r\n');
    const [routedAnswer, refusedAnswer] = await within(
      Promise.all(reads.map((r) => r.answer)),
      5_000,
      'both answers',
    );

    // A routed request arriving while draining: a retryable 503, and its connection closed.
    expect(routedAnswer.status).toBe(503);
    expect(routedAnswer.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(routedAnswer.headers['retry-after']).toBe('5');
    expect(routedAnswer.headers.connection).toBe('close');
    expect(routedAnswer.headers['x-request-id']).toMatch(UUID_RE);
    // The refused path: still the client's own 400, marked as every answer is, and closed too.
    expect(refusedAnswer.status).toBe(400);
    expect(refusedAnswer.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(refusedAnswer.body).code).toBe('validation.failed');
    expect(refusedAnswer.headers.connection).toBe('close');
    expect(refusedAnswer.headers['cache-control']).toBe('no-store');
    expect(refusedAnswer.headers['x-request-id']).toMatch(UUID_RE);
    // The server closes both connections, and with them the shutdown finishes (a connection kept
    // alive would hold it until the keep-alive timeout).
    await within(Promise.all(reads.map((r) => r.closed)), 5_000, 'the server to close both connections');
    await within(closing, 5_000, 'the close to finish');
  });
});
