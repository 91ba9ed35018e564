import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_WINDOW_SECONDS } from '../../src/features/security-notices/service.js';
import type { TestApp } from '../helpers/app.js';
import { bearer, createPerson, race, signIn } from '../helpers/identities.js';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// A batch held behind an ended window is claimed by one compare-and-set (the window's upsert):
// dispatchers racing for it, on one instance's pool or several instances, send it exactly once.
let sink: SmtpSink;
let t: TestApp;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await raceApp({ SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SECURITY_NOTICES: 'on' });
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
