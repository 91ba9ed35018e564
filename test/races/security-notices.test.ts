import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_WINDOW_SECONDS } from '../../src/features/security-notices/service.js';
import type { TestApp } from '../helpers/app.js';
import { bearer, createPerson, race, signIn } from '../helpers/identities.js';
import { bodyOf, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// A batch held behind an ended window is claimed by one compare-and-set (the window's upsert):
// dispatchers racing for it, on one instance's pool or several instances, send it exactly once.
let sink: SmtpSink;
let t: TestApp;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await raceApp({
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    SECURITY_NOTICES: 'on',
    SIGN_IN_NOTICES: 'on',
  });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

const PASSWORDS = ['lantern-orchard-velvet-73', 'quartz-meadow-ember-1945'];
const DISPATCHERS = 6;

const noticesTo = (to: string) =>
  sink.received.filter((m) => m.to.includes(to) && /^Subject: [^\r\n]*security change/im.test(m.raw));

describe('security-notice dispatchers racing for one batch', () => {
  it(`send it once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const g = await signIn(t.app, p);
      const change = (from: string, to: string) =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/password-changes',
          headers: bearer(g.accessToken),
          payload: { currentPassword: from, newPassword: to },
        });
      // The first change is sent at once and opens the window; the second is held behind it.
      expect((await change(p.password, PASSWORDS[0])).statusCode).toBe(204);
      await t.ctx.securityNotices.idle();
      expect((await change(PASSWORDS[0], PASSWORDS[1])).statusCode).toBe(204);
      await t.ctx.securityNotices.idle();
      expect(noticesTo(p.email), `round ${round}`).toHaveLength(1);

      t.clock.advance(NOTICE_WINDOW_SECONDS + 1);
      const claimed = await race(DISPATCHERS, (i) =>
        i % 2 === 0
          ? t.ctx.securityNotices.dispatch(p.identityId)
          : t.ctx.securityNotices.dispatchDue().then((n) => n > 0),
      );
      expect(claimed.filter(Boolean), `round ${round}`).toHaveLength(1);
      expect(noticesTo(p.email), `round ${round}`).toHaveLength(2);
      const left = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM security_notices WHERE identity_id = ${p.identityId}`,
      );
      expect(left).toBe(0);
    }
  });
});

// New sign-ins from new places, opened at once: one of them claims the identity's sign-in window and
// is told at once; whatever the claim did not take is held and sent once when the window ends.
// Every sign-in is told exactly once, and its history entry records it.
describe('new-sign-in notices of sign-ins opened at once', () => {
  const SIGN_INS = 4;
  const signInsTo = (to: string) =>
    sink.received.filter((m) => m.to.includes(to) && /^Subject: New sign-ins? to your account/m.test(m.raw));

  it(`tell each sign-in once, the first at once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      // Something to compare with: the first sign-in of an identity sends none.
      expect((await signInFrom(p, '203.0.113.7')).statusCode).toBe(201);
      await t.ctx.notices.idle();
      const answers = await race(SIGN_INS, (i) => signInFrom(p, `198.51.${100 + i}.${round + 1}`));
      expect(answers.map((a) => a.statusCode)).toEqual(Array(SIGN_INS).fill(201));
      await t.ctx.notices.idle();
      expect(signInsTo(p.email), `round ${round}`).toHaveLength(1);

      t.clock.advance(NOTICE_WINDOW_SECONDS + 1);
      await t.ctx.securityNotices.dispatchDue();
      await t.ctx.securityNotices.idle();
      const mails = signInsTo(p.email);
      expect(mails.length, `round ${round}`).toBeLessThanOrEqual(2);
      const told = mails.flatMap((m) =>
        [...bodyOf(m.raw).matchAll(/^From: (198\.51\.\d+\.\d+)/gm)].map((x) => x[1]),
      );
      expect(told.sort(), `round ${round}`).toEqual(
        Array.from({ length: SIGN_INS }, (_, i) => `198.51.${100 + i}.${round + 1}`).sort(),
      );
      const recorded = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM sign_in_attempts WHERE identity_id = ${p.identityId} AND notice_sent_at IS NOT NULL`,
      );
      expect(recorded, `round ${round}`).toBe(SIGN_INS);
    }
  });

  function signInFrom(p: { email: string; password: string }, remoteAddress: string) {
    return t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: p.email, password: p.password },
      remoteAddress,
    });
  }
});
