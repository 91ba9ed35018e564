import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { bodyOf, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { CHROME_LINUX, SAFARI_IPHONE, signInFrom } from './support.js';

const CHROME_LINUX_NEXT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/157.0.0.0 Safari/537.36';
const FIREFOX_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0';

let sink: SmtpSink;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createTestApp({
    env: { SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SIGN_IN_NOTICES: 'on' },
  });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

const mailTo = (to: string) => sink.received.filter((m) => m.to.includes(to));

describe('new sign-in notices', () => {
  it('are sent once for a device and network not seen in 90 days, never for the first sign-in or a known place', async () => {
    const p = await createPerson(t.ctx);
    // The first sign-in of an identity has nothing to compare with.
    await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    // The same browser family on the same /24, a version later: known.
    await signInFrom(t, p, CHROME_LINUX_NEXT, '203.0.113.200');
    expect(mailTo(p.email)).toHaveLength(0);

    // A new device: one message, with what, when, where from and how to end it; no link.
    const g = await signInFrom(t, p, FIREFOX_WINDOWS, '198.51.100.23');
    const mails = mailTo(p.email);
    expect(mails).toHaveLength(1);
    const body = bodyOf(mails[0].raw);
    expect(mails[0].raw).toContain('Subject: New sign-in to your account');
    expect(body).toContain('Firefox 140 on Windows 10');
    expect(body).toContain('198.51.100.23');
    expect(body).toContain(`${t.clock.now().toISOString().slice(0, 10)}`);
    expect(body).toMatch(/end that session under Devices/);
    expect(body).not.toMatch(/https?:\/\//);
    expect(body).not.toContain(g.accessToken);

    // Recorded on that sign-in's history entry, and only there.
    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history',
      headers: bearer(g.accessToken),
    });
    const entries = history.json().data as { ipAddress: string; noticeSentAt: string | null }[];
    expect(entries.filter((e) => e.noticeSentAt !== null).map((e) => e.ipAddress)).toEqual(['198.51.100.23']);

    // Once known, the same place again sends nothing.
    await signInFrom(t, p, FIREFOX_WINDOWS, '198.51.100.99');
    expect(mailTo(p.email)).toHaveLength(1);
  });

  it('a known device on another network counts as new; a place unused for 90 days is new again', async () => {
    const p = await createPerson(t.ctx);
    await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    await signInFrom(t, p, CHROME_LINUX, '192.0.2.10');
    expect(mailTo(p.email)).toHaveLength(1);
    // An IPv6 /64 is one network.
    await signInFrom(t, p, CHROME_LINUX, '2001:db8:5:6::1');
    await signInFrom(t, p, CHROME_LINUX, '2001:db8:5:6::ffff');
    expect(mailTo(p.email)).toHaveLength(2);
    t.clock.advance(91 * 86400);
    await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    expect(mailTo(p.email)).toHaveLength(3);
  });

  it('never delay or fail the sign-in: a channel that is down still answers 201, and nothing is recorded as sent', async () => {
    const closed = await freePort();
    const down = await createTestApp({
      env: { SMTP_URL: `smtp://127.0.0.1:${closed}`, SIGN_IN_NOTICES: 'on', NOTIFY_TIMEOUT_MS: '500' },
    });
    try {
      const p = await createPerson(down.ctx);
      await signInFrom(down, p, CHROME_LINUX, '203.0.113.7');
      await signInFrom(down, p, FIREFOX_WINDOWS, '198.51.100.23');
      const sent = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sign_in_attempts WHERE identity_id = ${p.identityId} AND notice_sent_at IS NOT NULL`.execute(
        down.db.database.db,
      );
      expect(sent.rows[0].n).toBe(0);
      expect(down.logs()).toContain('new sign-in notice');
      expect(down.logs()).not.toContain(p.email);
    } finally {
      await down.close();
    }
  });

  it("count against the destination's message window: past it a notice is dropped and recorded, the sign-in still 201, and the next window sends again", async () => {
    const metricsPort = await freePort();
    const limited = await createTestApp({
      env: {
        SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        SIGN_IN_NOTICES: 'on',
        RATE_LIMIT_SENDS_A_MESSAGE: '2/900',
        METRICS_PORT: String(metricsPort),
      },
    });
    try {
      const p = await createPerson(limited.ctx);
      await signInFrom(limited, p, CHROME_LINUX, '203.0.113.7');
      // Two new places: two notices, which fill the destination's window of two.
      await signInFrom(limited, p, FIREFOX_WINDOWS, '198.51.100.23');
      await signInFrom(limited, p, SAFARI_IPHONE, '2001:db8:1:2::3');
      expect(mailTo(p.email)).toHaveLength(2);
      // The notices counted in the same window as every other message to the address.
      const recovery = await limited.app.inject({
        method: 'POST',
        url: '/api/v1/password-recoveries',
        payload: { identifierType: 'email', identifier: p.email },
        remoteAddress: '192.0.2.50',
      });
      expect(recovery.statusCode).toBe(429);

      // A third new place: the sign-in is answered 201 as ever (signInFrom asserts it); the notice
      // is dropped, logged without the address, counted, and the history entry says none was sent.
      const dropped = await signInFrom(limited, p, FIREFOX_WINDOWS, '192.0.2.99');
      expect(mailTo(p.email)).toHaveLength(2);
      expect(limited.logs()).toContain('new sign-in notice dropped');
      expect(limited.logs()).not.toContain(p.email);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toContain('identity_refusals_total{rule="messages:notice"} 1');
      const history = await limited.app.inject({
        method: 'GET',
        url: '/api/v1/sign-ins/history',
        headers: bearer(dropped.accessToken),
      });
      const entries = history.json().data as { ipAddress: string; noticeSentAt: string | null }[];
      expect(
        entries
          .filter((e) => e.noticeSentAt !== null)
          .map((e) => e.ipAddress)
          .sort(),
      ).toEqual(['198.51.100.23', '2001:db8:1:2::3']);
      expect(entries.find((e) => e.ipAddress === '192.0.2.99')?.noticeSentAt).toBeNull();

      // The window ends with the clock: the next new place is told again.
      limited.clock.advance(900);
      await signInFrom(limited, p, SAFARI_IPHONE, '192.0.2.150');
      expect(mailTo(p.email)).toHaveLength(3);
    } finally {
      await limited.close();
    }
  });

  it('SIGN_IN_NOTICES=off sends none', async () => {
    const off = await createTestApp({
      env: { SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SIGN_IN_NOTICES: 'off' },
    });
    try {
      const p = await createPerson(off.ctx);
      await signInFrom(off, p, CHROME_LINUX, '203.0.113.7');
      await signInFrom(off, p, FIREFOX_WINDOWS, '198.51.100.23');
      expect(mailTo(p.email)).toHaveLength(0);
    } finally {
      await off.close();
    }
  });
});
