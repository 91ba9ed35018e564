import { executionAsyncId } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { NOTICE_WINDOW_SECONDS } from '../../src/features/security-notices/service.js';
import { adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';
import { bodyOf, type ReceivedMail, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

const CHROME_MAC =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';
const PASSWORDS = ['lantern-orchard-velvet-73', 'quartz-meadow-ember-1945', 'harbour-tulip-cobalt-862'];

let sink: SmtpSink;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createTestApp({
    admin: true,
    env: { SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SECURITY_NOTICES: 'on' },
  });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

/** The text of a message, its quoted-printable soft breaks and escapes undone. */
function textOf(raw: string): string {
  return bodyOf(raw)
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

const isNotice = (m: ReceivedMail) =>
  /^Subject: (A security change|Security changes) to your account/m.test(m.raw);
/** The security notices `to` received, oldest first. */
const noticesTo = (to: string, sinkOf: SmtpSink = sink) =>
  sinkOf.received.filter((m) => m.to.includes(to) && isNotice(m));

async function changePassword(app: TestApp, accessToken: string, from: string, to: string) {
  const res = await app.app.inject({
    method: 'POST',
    url: '/api/v1/password-changes',
    headers: { ...bearer(accessToken), 'user-agent': CHROME_MAC },
    remoteAddress: '198.51.100.23',
    payload: { currentPassword: from, newPassword: to },
  });
  await app.ctx.securityNotices.idle();
  return res;
}

/** An elevation through the real step-up routes, its code read from the SMTP sink. */
async function elevate(app: TestApp, p: Person, accessToken: string): Promise<Record<string, string>> {
  const before = sink.received.filter((m) => m.to.includes(p.email)).length;
  const start = await app.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups',
    headers: bearer(accessToken),
    payload: { channel: 'identifier' },
  });
  expect(start.statusCode, start.body).toBe(201);
  // The code leaves just after the answer.
  await vi.waitFor(() => expect(sink.received.filter((m) => m.to.includes(p.email)).length).toBe(before + 1));
  const confirm = await app.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups/confirmations',
    headers: bearer(accessToken),
    payload: { challengeId: start.json().data.challengeId, code: sink.lastCode(p.email) },
  });
  expect(confirm.statusCode, confirm.body).toBe(201);
  return { ...bearer(accessToken), 'x-elevation-token': confirm.json().data.elevationToken };
}

async function queued(app: TestApp, identityId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM security_notices WHERE identity_id = ${identityId}`.execute(
    app.ctx.database.db,
  );
  return r.rows[0].n;
}

describe('security notices', () => {
  it('a password change sends one message to the verified address: what, when, device, address; no link, no secret', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const res = await changePassword(t, g.accessToken, p.password, PASSWORDS[0]);
    expect(res.statusCode, res.body).toBe(204);

    const mails = noticesTo(p.email);
    expect(mails).toHaveLength(1);
    expect(mails[0].raw).toContain('Subject: A security change to your account');
    const body = textOf(mails[0].raw);
    expect(body).toContain('Your password was changed.');
    expect(body).toContain(`When: ${t.clock.now().toISOString().slice(0, 10)}`);
    expect(body).toContain('Device: Chrome 140 on Mac OS');
    expect(body).toContain('198.51.100.23');
    expect(body).toContain("If this wasn't you, sign in and secure your account");
    expect(body).not.toMatch(/https?:|www\./i);
    expect(body).not.toContain(p.password);
    expect(body).not.toContain(PASSWORDS[0]);
    expect(body).not.toContain(g.accessToken);
    expect(body).not.toMatch(/\b\d{6}\b/);
    // Sent, so nothing stays queued.
    expect(await queued(t, p.identityId)).toBe(0);
  });

  it('a refused change queues nothing and sends nothing (the notice commits with the change)', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const res = await changePassword(t, g.accessToken, `${p.password}x`, PASSWORDS[0]);
    expect(res.statusCode).toBe(422);
    expect(await queued(t, p.identityId)).toBe(0);
    expect(noticesTo(p.email)).toHaveLength(0);
  });

  it('three changes in one window: the first at once, the other two held and sent as one message when the window ends', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    expect((await changePassword(t, g.accessToken, p.password, PASSWORDS[0])).statusCode).toBe(204);
    expect(noticesTo(p.email)).toHaveLength(1);

    t.clock.advance(60);
    expect((await changePassword(t, g.accessToken, PASSWORDS[0], PASSWORDS[1])).statusCode).toBe(204);
    const headers = await elevate(t, p, g.accessToken);
    const issued = await t.app.inject({ method: 'POST', url: '/api/v1/recovery-codes', headers });
    expect(issued.statusCode, issued.body).toBe(201);
    await t.ctx.securityNotices.idle();
    expect(noticesTo(p.email)).toHaveLength(1);
    expect(await queued(t, p.identityId)).toBe(2);

    // Before the window ends the dispatcher sends nothing.
    t.clock.advance(NOTICE_WINDOW_SECONDS - 120);
    await t.ctx.securityNotices.dispatchDue();
    await t.ctx.securityNotices.idle();
    expect(noticesTo(p.email)).toHaveLength(1);

    t.clock.advance(61);
    await t.ctx.securityNotices.dispatchDue();
    await t.ctx.securityNotices.idle();
    const mails = noticesTo(p.email);
    expect(mails).toHaveLength(2);
    expect(mails[1].raw).toContain('Subject: Security changes to your account');
    const digest = textOf(mails[1].raw);
    expect(digest).toContain('2 security settings of your account were changed');
    expect(digest).toContain('Your password was changed.');
    expect(digest).toContain('New recovery codes were created');
    expect(digest).not.toMatch(/https?:/);
    for (const code of issued.json().data.recoveryCodes as string[]) expect(digest).not.toContain(code);
    expect(await queued(t, p.identityId)).toBe(0);

    // Nothing more to send.
    t.clock.advance(NOTICE_WINDOW_SECONDS);
    await t.ctx.securityNotices.dispatchDue();
    await t.ctx.securityNotices.idle();
    expect(noticesTo(p.email)).toHaveLength(2);
  });

  it('a removed address is told too, with every address still verified, at once or when the window ends', async () => {
    const p = await createPerson(t.ctx);
    const addresses = [1, 2].map((i) => ({
      id: randomUUID(),
      value: `extra${i}-${randomUUID().slice(0, 8)}@example.com`,
    }));
    // Verified after the first, so the step-up code goes to the first.
    const later = new Date(t.clock.now().getTime() + 1000);
    for (const a of addresses) {
      await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
                VALUES (${a.id}, ${p.identityId}, 'email', ${a.value}, ${later}, ${later})`.execute(
        t.ctx.database.db,
      );
    }
    const [second, third] = addresses;
    const g = await signIn(t.app, p);
    const headers = await elevate(t, p, g.accessToken);
    const remove = async (id: string) => {
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/v1/sign-in-methods/${id}/removals`,
        headers,
      });
      expect(res.statusCode, res.body).toBe(204);
      await t.ctx.securityNotices.idle();
    };

    // The first change of the window: sent at once, to the removed address as well.
    await remove(second.id);
    for (const to of [p.email, second.value, third.value]) {
      const mails = noticesTo(to);
      expect(mails, to).toHaveLength(1);
      expect(textOf(mails[0].raw)).toContain('An email address or phone number was removed.');
    }

    // Held behind the window: the removed address waits sealed, never in clear.
    await remove(third.id);
    const held = await sql<{ sealed_destination: string | null }>`
      SELECT sealed_destination FROM security_notices WHERE identity_id = ${p.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(held.rows).toHaveLength(1);
    expect(held.rows[0].sealed_destination).toMatch(/^v1\./);
    expect(held.rows[0].sealed_destination).not.toContain(third.value);
    expect(held.rows[0].sealed_destination).not.toContain(third.value.split('@')[0]);

    t.clock.advance(NOTICE_WINDOW_SECONDS + 1);
    await t.ctx.securityNotices.dispatchDue();
    await t.ctx.securityNotices.idle();
    // The verified address and the one just removed; not the one removed before.
    expect(noticesTo(p.email)).toHaveLength(2);
    expect(noticesTo(third.value)).toHaveLength(2);
    expect(noticesTo(second.value)).toHaveLength(1);
    expect(textOf(noticesTo(third.value)[1].raw)).toContain('An email address or phone number was removed.');
  });

  it("an operator's erasure takes the held notices with it: nothing is sent for an erased identity", async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    expect((await changePassword(t, g.accessToken, p.password, PASSWORDS[0])).statusCode).toBe(204);
    expect((await changePassword(t, g.accessToken, PASSWORDS[0], PASSWORDS[1])).statusCode).toBe(204);
    expect(await queued(t, p.identityId)).toBe(1);
    const erased = await adminRequest(t.admin!, 'POST', `/identities/${p.identityId}/erasures`);
    expect(erased.statusCode, erased.body).toBe(204);
    expect(await queued(t, p.identityId)).toBe(0);
    t.clock.advance(NOTICE_WINDOW_SECONDS + 1);
    await t.ctx.securityNotices.dispatchDue();
    await t.ctx.securityNotices.idle();
    expect(noticesTo(p.email)).toHaveLength(1);
  });

  it('a sign-up confirmation is not a change to tell', async () => {
    const email = `new-${randomUUID().slice(0, 8)}@example.com`;
    const up = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ups',
      payload: { identifierType: 'email', identifier: email, password: PASSWORDS[2] },
    });
    expect(up.statusCode, up.body).toBe(201);
    const confirm = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ups/confirmations',
      payload: {
        identifierType: 'email',
        identifier: email,
        code: sink.lastCode(email),
        password: PASSWORDS[2],
      },
    });
    expect(confirm.statusCode, confirm.body).toBe(204);
    await t.ctx.securityNotices.idle();
    expect(noticesTo(email)).toHaveLength(0);
  });
});

describe('security notices and the message limits', () => {
  it('are sent when the destination is past its message limit', async () => {
    const limitedSink = await startSmtpSink();
    const limited = await createTestApp({
      env: {
        SMTP_URL: `smtp://127.0.0.1:${limitedSink.port}`,
        SECURITY_NOTICES: 'on',
        RATE_LIMIT_SENDS_A_MESSAGE: '1/900',
      },
    });
    try {
      const p = await createPerson(limited.ctx);
      const recover = () =>
        limited.app.inject({
          method: 'POST',
          url: '/api/v1/password-recoveries',
          payload: { identifierType: 'email', identifier: p.email },
        });
      expect((await recover()).statusCode).toBe(201);
      // The destination's window is full: another message to it is refused.
      expect((await recover()).statusCode).toBe(429);

      const g = await signIn(limited.app, p);
      expect((await changePassword(limited, g.accessToken, p.password, PASSWORDS[0])).statusCode).toBe(204);
      expect(noticesTo(p.email, limitedSink)).toHaveLength(1);
    } finally {
      await limited.close();
      await limitedSink.close();
    }
  });

  it('SECURITY_NOTICES=off sends none and queues none', async () => {
    const off = await createTestApp({
      env: { SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SECURITY_NOTICES: 'off' },
    });
    try {
      const p = await createPerson(off.ctx);
      const g = await signIn(off.app, p);
      expect((await changePassword(off, g.accessToken, p.password, PASSWORDS[0])).statusCode).toBe(204);
      expect(await queued(off, p.identityId)).toBe(0);
      expect(noticesTo(p.email)).toHaveLength(0);
    } finally {
      await off.close();
    }
  });
});

describe('the request scope that tells a change its device and address', () => {
  /**
   * Whether promise hooks are on in this process: inside a promise's reaction, executionAsyncId()
   * is that promise's own id while they are on, and 0 while they are off. On Node 20 and 22 an
   * AsyncLocalStorage turns them on from its first run(); Node 24's never does.
   */
  const promiseHooksOn = async () => (await Promise.resolve().then(() => executionAsyncId())) !== 0;
  /** What the scope reads of a request: its address and its User-Agent. */
  const from = (ip: string, userAgent: string) =>
    ({ ip, headers: { 'user-agent': userAgent } }) as unknown as FastifyRequest;

  it('is switched off once no change is in flight, so later answers do not pay for it', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    expect((await changePassword(t, g.accessToken, p.password, PASSWORDS[0])).statusCode).toBe(204);
    // The change was told with its device: the scope was on while it ran.
    expect(textOf(noticesTo(p.email)[0].raw)).toContain('Device: Chrome 140 on Mac OS');
    expect(await promiseHooksOn()).toBe(false);
  });

  it('a change keeps its device and address when another leaves the scope while it runs', async () => {
    const p = await createPerson(t.ctx);
    const notices = t.ctx.securityNotices;
    let releaseFirst = () => {};
    const first = notices.runInScope(
      from('192.0.2.1', 'first'),
      () =>
        new Promise<void>((resolve) => {
          releaseFirst = resolve;
        }),
    );
    await notices.runInScope(from('198.51.100.77', CHROME_MAC), async () => {
      releaseFirst();
      // The first handler has left the scope; this one is still inside it.
      await first;
      await t.ctx.database.db
        .transaction()
        .execute((trx) => t.ctx.audit.appendOwn(trx, 'identity.password.changed', p.identityId, {}));
    });
    const rows = await sql<{ device: string | null; ip_address: string | null }>`
      SELECT device, ip_address FROM security_notices WHERE identity_id = ${p.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(rows.rows).toEqual([{ device: 'Chrome 140 on Mac OS 10.15.7', ip_address: '198.51.100.77' }]);
    expect(await promiseHooksOn()).toBe(false);
  });

  it('a handler that throws leaves the scope too', async () => {
    expect(() =>
      t.ctx.securityNotices.runInScope(from('192.0.2.2', 'x'), () => {
        throw new Error('refused');
      }),
    ).toThrow('refused');
    await expect(
      t.ctx.securityNotices.runInScope(from('192.0.2.3', 'x'), async () => {
        throw new Error('refused later');
      }),
    ).rejects.toThrow('refused later');
    expect(await promiseHooksOn()).toBe(false);
  });
});
