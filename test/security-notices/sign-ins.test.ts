import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_WINDOW_SECONDS } from '../../src/features/security-notices/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { CHROME_LINUX, SAFARI_IPHONE, signInFrom } from '../helpers/devices.js';
import { bearer, createPerson } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { bodyOf, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

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
    // Past the notice window, so the next new place is told at once rather than with the next batch.
    t.clock.advance(NOTICE_WINDOW_SECONDS);
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

  it("have a window of their own, not the destination's: the first at once, later ones in one message when it ends", async () => {
    const metricsPort = await freePort();
    const own = await createTestApp({
      env: {
        SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        SIGN_IN_NOTICES: 'on',
        RATE_LIMIT_SENDS_A_MESSAGE: '5/900',
        METRICS_PORT: String(metricsPort),
      },
    });
    try {
      const p = await createPerson(own.ctx);
      await signInFrom(own, p, CHROME_LINUX, '203.0.113.7');
      // The first new place opens the identity's notice window and is told at once.
      await signInFrom(own, p, FIREFOX_WINDOWS, '198.51.100.23');
      expect(mailTo(p.email)).toHaveLength(1);
      // Two more new places within the window: held, nothing recorded as sent yet.
      await signInFrom(own, p, SAFARI_IPHONE, '2001:db8:1:2::3');
      own.clock.advance(60);
      await signInFrom(own, p, CHROME_LINUX, '192.0.2.99');
      expect(mailTo(p.email)).toHaveLength(1);
      // The history entries a notice was recorded on (read from the table: the access tokens of
      // these sign-ins expire before the window ends).
      const sentFor = async () => {
        const rows = await sql<{ ip: string }>`
          SELECT ip_address AS ip FROM sign_in_attempts
          WHERE identity_id = ${p.identityId} AND notice_sent_at IS NOT NULL ORDER BY ip_address`.execute(
          own.db.database.db,
        );
        return rows.rows.map((r) => r.ip);
      };
      expect(await sentFor()).toEqual(['198.51.100.23']);

      // Notices spent nothing of the destination's message window: all five recovery starts it
      // allows (the default) still answer 201, and the sixth is the first 429.
      for (let i = 1; i <= 6; i++) {
        const recovery = await own.app.inject({
          method: 'POST',
          url: '/api/v1/password-recoveries',
          payload: { identifierType: 'email', identifier: p.email },
          remoteAddress: `192.0.${100 + i}.50`,
        });
        expect(recovery.statusCode, `recovery start ${i}`).toBe(i <= 5 ? 201 : 429);
      }
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).not.toContain('messages:notice');

      // Before the window ends the dispatcher sends nothing; once it has, one message names both.
      own.clock.advance(NOTICE_WINDOW_SECONDS - 120);
      expect(await own.ctx.securityNotices.dispatchDue()).toBe(0);
      own.clock.advance(60);
      expect(await own.ctx.securityNotices.dispatchDue()).toBe(1);
      await own.ctx.securityNotices.idle();
      const mails = mailTo(p.email).filter((m) => /^Subject: New sign-in/m.test(m.raw));
      expect(mails).toHaveLength(2);
      expect(mails[1].raw).toContain('Subject: New sign-ins to your account');
      const body = bodyOf(mails[1].raw);
      expect(body).toContain('2 sign-ins to your account');
      expect(body).toContain('2001:db8:1:2::3');
      expect(body).toContain('192.0.2.99');
      expect(body).not.toContain('198.51.100.23');
      expect(body).not.toMatch(/https?:\/\//);
      expect(await sentFor()).toEqual(['192.0.2.99', '198.51.100.23', '2001:db8:1:2::3']);
      // Nothing stays queued, and the window just opened holds the next new place.
      expect(await own.ctx.securityNotices.dispatchDue()).toBe(0);
    } finally {
      await own.close();
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
