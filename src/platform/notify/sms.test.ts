import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/helpers/net.js';
import { createNotifier, type Notifier } from './notifier.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

interface Request {
  method: string | undefined;
  contentType: string | undefined;
  body: string;
}

/** A real HTTP gateway on a loopback port; `respond` decides what happens to each request. */
async function startGateway(
  respond: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void,
) {
  const requests: Request[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method, contentType: req.headers['content-type'], body });
      respond(req, res, body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.unshift(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const port = (server.address() as net.AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/sms`, requests };
}

function notifierFor(smsWebhookUrl: string, timeoutMs = 2000): Notifier {
  const notifier = createNotifier({
    production: true,
    dataDir: '/nonexistent-outbox-must-not-be-used',
    mailFrom: 'no-reply@example.com',
    smsWebhookUrl,
    timeoutMs,
  });
  cleanups.push(() => notifier.close());
  return notifier;
}

const sms = {
  to: '+33612345678',
  type: 'phone' as const,
  subject: 'Your code',
  text: 'Your code is 731946 ok',
};

describe('SMS webhook channel', () => {
  it('POSTs { to, text } as JSON and reports a 2xx as delivered', async () => {
    const gateway = await startGateway((_req, res) => {
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"abc"}');
    });
    const notifier = notifierFor(gateway.url);
    expect(notifier.canDeliver('phone')).toBe(true);
    expect(notifier.canDeliver('email')).toBe(false);

    expect(await notifier.send(sms)).toEqual({ status: 'DELIVERED', resendable: false });
    expect(gateway.requests).toHaveLength(1);
    const [request] = gateway.requests;
    expect(request?.method).toBe('POST');
    expect(request?.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(request?.body ?? 'null')).toEqual({
      to: '+33612345678',
      text: 'Your code is 731946 ok',
    });
  });

  it('reports a 500 answer as resendable', async () => {
    const gateway = await startGateway((_req, res) => {
      res.writeHead(500).end('boom');
    });
    expect(await notifierFor(gateway.url).send(sms)).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect(gateway.requests).toHaveLength(1);
  });

  it('reports a 400 answer as resendable', async () => {
    const gateway = await startGateway((_req, res) => {
      res.writeHead(400).end();
    });
    expect(await notifierFor(gateway.url).send(sms)).toEqual({ status: 'NOT_DELIVERED', resendable: true });
  });

  it('reports a refused connection as resendable', async () => {
    const port = await freePort();
    expect(await notifierFor(`http://127.0.0.1:${port}/sms`).send(sms)).toEqual({
      status: 'NOT_DELIVERED',
      resendable: true,
    });
  });

  it('reports a DNS failure as resendable', async () => {
    expect(await notifierFor('http://no-such-gateway.invalid/sms').send(sms)).toEqual({
      status: 'NOT_DELIVERED',
      resendable: true,
    });
  });

  it('reports a gateway that never answers as not resendable, within the timeout', async () => {
    const gateway = await startGateway(() => {
      // never answers
    });
    const notifier = notifierFor(gateway.url, 500);
    const started = Date.now();
    expect(await notifier.send(sms)).toEqual({ status: 'NOT_DELIVERED', resendable: false });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(gateway.requests).toHaveLength(1);
  });

  it('reports a connection reset after the request was sent as not resendable', async () => {
    const gateway = await startGateway((req) => {
      req.socket.destroy();
    });
    expect(await notifierFor(gateway.url).send(sms)).toEqual({ status: 'NOT_DELIVERED', resendable: false });
    expect(gateway.requests).toHaveLength(1);
  });
});
