import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/platform/db/database.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { startSmtpSink } from '../helpers/smtp.js';

/**
 * Issue 7 item 3: the mail server is down or hangs. The registration commits on the PostgreSQL
 * server whatever the channel does, and the answer says whether a fresh sign-up would resend.
 */
const PASSWORD = `smtp-${randomBytes(8).toString('hex')}-pw`;
const email = (label: string) => `smtp-${label}-${randomBytes(4).toString('hex')}@example.com`;

// Run in the order registered: the app (and its pooled SMTP connections) closes before the sink.
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function app(env: Record<string, string>): Promise<TestApp> {
  const t = await createTestApp({ server: true, env });
  cleanups.push(() => t.close());
  return t;
}

function signUp(t: TestApp, identifier: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ups',
    payload: { identifierType: 'email', identifier, password: PASSWORD },
  });
}

/** The registration as stored: identity, unverified identifier, live challenge with its audit record. */
async function stored(db: Db, value: string) {
  const r = await sql<{
    identities: number;
    identifiers: number;
    unverified: number;
    challenges: number;
    audited: number;
  }>`
    SELECT
      (SELECT count(*)::int FROM identities x JOIN identifiers i ON i.identity_id = x.id WHERE i.value = ${value}) AS identities,
      (SELECT count(*)::int FROM identifiers WHERE value = ${value}) AS identifiers,
      (SELECT count(*)::int FROM identifiers WHERE value = ${value} AND verified_at IS NULL) AS unverified,
      (SELECT count(*)::int FROM challenges c JOIN identifiers i ON i.id = c.identifier_id
        WHERE i.value = ${value} AND c.purpose = 'sign_up' AND c.spent_at IS NULL AND c.revoked_at IS NULL) AS challenges,
      (SELECT count(*)::int FROM audit_records a JOIN challenges c ON a.details->>'challengeId' = c.id::text
        JOIN identifiers i ON i.id = c.identifier_id WHERE i.value = ${value}) AS audited`.execute(db);
  return r.rows[0];
}

/** A real SMTP sink on `port`, closed after the test. */
async function smtpSink(port: number) {
  const sink = await startSmtpSink(port);
  cleanups.push(sink.close);
  return sink.received;
}

describe('SMTP down or hanging', () => {
  it('a closed port: every sign-up commits and answers 201 NOT_DELIVERED resendable; a later sign-up resends', async () => {
    const port = await freePort();
    const t = await app({ SMTP_URL: `smtp://127.0.0.1:${port}` });
    const addresses = Array.from({ length: 5 }, (_, i) => email(`closed${i}`));
    const answers = await Promise.all(addresses.map((a) => signUp(t, a)));
    for (const [i, res] of answers.entries()) {
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().data.challengeDelivery).toEqual({ status: 'NOT_DELIVERED', resendable: true });
      expect(res.body).not.toContain(PASSWORD);
      expect(await stored(t.db.database.db, addresses[i])).toEqual({
        identities: 1,
        identifiers: 1,
        unverified: 1,
        challenges: 1,
        audited: 1,
      });
    }

    // resendable true means a fresh sign-up sends a fresh code: once mail is back it arrives and confirms.
    const received = await smtpSink(port);
    const again = await signUp(t, addresses[0]);
    expect(again.statusCode).toBe(201);
    expect(again.json().data.challengeDelivery).toEqual({ status: 'DELIVERED', resendable: false });
    const mine = received.filter((m) => m.to.includes(addresses[0]));
    expect(mine).toHaveLength(1);
    const code = mine[0].raw.split(/\s+/).find((tok) => /^\d{6}$/.test(tok));
    expect(code).toBeDefined();
    const confirmed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ups/confirmations',
      payload: { identifierType: 'email', identifier: addresses[0], password: PASSWORD, code },
    });
    expect(confirmed.statusCode, confirmed.body).toBe(204);
    // Still one identity for the address, now verified, with both registrations' challenges settled.
    expect(await stored(t.db.database.db, addresses[0])).toMatchObject({
      identities: 1,
      identifiers: 1,
      unverified: 0,
    });
  });

  it('a server that accepts TCP and never answers: 201 NOT_DELIVERED not resendable, within the timeout', async () => {
    const sockets = new Set<net.Socket>();
    let connections = 0;
    const silent = net.createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const port = (silent.address() as net.AddressInfo).port;
    const t = await app({ SMTP_URL: `smtp://127.0.0.1:${port}`, NOTIFY_TIMEOUT_MS: '500' });

    const addresses = Array.from({ length: 3 }, (_, i) => email(`silent${i}`));
    const started = Date.now();
    const answers = await Promise.all(addresses.map((a) => signUp(t, a)));
    // A hung mail server costs the caller the delivery timeout, not the request.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(connections).toBeGreaterThan(0);
    for (const [i, res] of answers.entries()) {
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().data.challengeDelivery).toEqual({ status: 'NOT_DELIVERED', resendable: false });
      expect(await stored(t.db.database.db, addresses[i])).toEqual({
        identities: 1,
        identifiers: 1,
        unverified: 1,
        challenges: 1,
        audited: 1,
      });
    }
  });
});
