import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { bodyOf, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { codeIn, confirm, emailForm, identifierRow, PASSWORD, signUp, uniqueEmail } from './helpers.js';

describe('sign-up over SMTP', () => {
  let sink: SmtpSink;
  let t: TestApp;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${sink.port}` } });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('delivers the code by mail; the code confirms; the verified address is then taken', async () => {
    const address = uniqueEmail('smtp');
    const res = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
    expect(res.statusCode).toBe(201);
    expect(res.json().data.challengeDelivery).toEqual({ status: 'DELIVERED', resendable: false });
    expect(res.json().data.identity).toEqual({ identifierType: 'email', identifier: 's***@example.com' });

    const mine = sink.received.filter((m) => m.to.includes(address));
    expect(mine).toHaveLength(1);
    const code = codeIn(bodyOf(mine[0].raw));
    expect(res.body).not.toContain(code);

    const ok = await confirm(t.app, { ...emailForm(address), password: PASSWORD, code });
    expect(ok.statusCode).toBe(204);
    expect(ok.body).toBe('');

    const again = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('identity.identifier_taken');
    // A refused sign-up sends nothing.
    expect(sink.received.filter((m) => m.to.includes(address))).toHaveLength(1);
  });

  it('sends the normalised (lower-cased) address', async () => {
    const address = uniqueEmail('mixed');
    const res = await signUp(t.app, { ...emailForm(address.toUpperCase()), password: PASSWORD });
    expect(res.statusCode).toBe(201);
    expect(sink.received.filter((m) => m.to.includes(address))).toHaveLength(1);
  });
});

describe('sign-up when SMTP fails', () => {
  it('a closed port proves the code never left: 201 NOT_DELIVERED, resendable, and the registration exists', async () => {
    const port = await freePort();
    const t = await createTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
    try {
      const address = uniqueEmail('closed');
      const res = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
      expect(res.statusCode).toBe(201);
      expect(res.json().data.challengeDelivery).toEqual({ status: 'NOT_DELIVERED', resendable: true });
      const rows = await identifierRow(t.db.database.db, address);
      expect(rows).toHaveLength(1);
      expect(rows[0].verified_at).toBeNull();
      const identities = await sql<{ id: string }>`
        SELECT id FROM identities WHERE id = ${rows[0].identity_id}`.execute(t.db.database.db);
      expect(identities.rows).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('a server that accepts the connection and never answers: NOT_DELIVERED, not resendable', async () => {
    const sockets = new Set<net.Socket>();
    let connections = 0;
    const silent = net.createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const t = await createTestApp({
      env: { SMTP_URL: `smtp://127.0.0.1:${port}`, NOTIFY_TIMEOUT_MS: '500' },
    });
    try {
      const address = uniqueEmail('silent');
      const res = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
      expect(res.statusCode).toBe(201);
      expect(res.json().data.challengeDelivery).toEqual({ status: 'NOT_DELIVERED', resendable: false });
      // The connection was made: the failure is the silence, not a refusal.
      expect(connections).toBeGreaterThan(0);
      expect(await identifierRow(t.db.database.db, address)).toHaveLength(1);
    } finally {
      await t.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
