import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { codeIn, confirm, identifierRow, PASSWORD, signUp } from './helpers.js';

interface Hit {
  contentType: string | undefined;
  body: { to: string; text: string };
}

/** A real HTTP gateway on loopback: records each POST and answers with the status it is told. */
async function startGateway() {
  const hits: Hit[] = [];
  let status = 200;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      raw += c;
    });
    req.on('end', () => {
      hits.push({ contentType: req.headers['content-type'], body: JSON.parse(raw) });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    hits,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sms`,
    answer(code: number) {
      status = code;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('sign-up by phone over the SMS gateway', () => {
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let t: TestApp;

  beforeAll(async () => {
    gateway = await startGateway();
    t = await createTestApp({ env: { SMS_WEBHOOK_URL: gateway.url } });
  });
  afterAll(async () => {
    await t?.close();
    await gateway?.close();
  });

  it('posts { to: E.164, text } to the gateway; the code in the text confirms', async () => {
    const form = { identifierType: 'phone', identifier: '06 12 34 56 78', country: 'FR' };
    const res = await signUp(t.app, { ...form, password: PASSWORD });
    expect(res.statusCode).toBe(201);
    expect(res.json().data.identity).toEqual({ identifierType: 'phone', identifier: '+33******78' });
    expect(res.json().data.challengeDelivery).toEqual({ status: 'DELIVERED', resendable: false });

    expect(gateway.hits).toHaveLength(1);
    const [hit] = gateway.hits;
    expect(hit.contentType).toMatch(/^application\/json/);
    expect(Object.keys(hit.body).sort()).toEqual(['text', 'to']);
    expect(hit.body.to).toBe('+33612345678');
    const code = codeIn(hit.body.text);

    // The stored key is the E.164 number, whatever rendering was typed.
    const rows = await identifierRow(t.db.database.db, '+33612345678');
    expect(rows).toHaveLength(1);
    expect(rows[0].verified_at).toBeNull();

    const ok = await confirm(t.app, { ...form, identifier: '+33 6 12 34 56 78', password: PASSWORD, code });
    expect(ok.statusCode).toBe(204);
    const after = await identifierRow(t.db.database.db, '+33612345678');
    expect(after[0].verified_at).not.toBeNull();
  });

  it('a gateway answering 503 never took the message: 201 NOT_DELIVERED, resendable', async () => {
    gateway.answer(503);
    try {
      const res = await signUp(t.app, {
        identifierType: 'phone',
        identifier: '07 98 76 54 32',
        country: 'FR',
        password: PASSWORD,
      });
      expect(res.statusCode).toBe(201);
      expect(res.json().data.challengeDelivery).toEqual({ status: 'NOT_DELIVERED', resendable: true });
      expect(await identifierRow(t.db.database.db, '+33798765432')).toHaveLength(1);
    } finally {
      gateway.answer(200);
    }
  });
});
