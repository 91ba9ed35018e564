import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { bearer, createPerson, race, signIn } from '../helpers/identities.js';
import { context, renew } from '../sessions/support.js';
import { ROUNDS, raceApp } from './support.js';

// Issue 14: an owner ending one device's session while that device renews, and two devices ending
// each other. The revocation is one compare-and-set; renewal locks the token and the session.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

const revoke = (accessToken: string, sessionId: string) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1/sessions/${sessionId}/revocations`,
    headers: bearer(accessToken),
  });

async function sessionIdOf(accessToken: string): Promise<string> {
  return (await context(t.app, accessToken)).json().data.sessionId;
}

describe('ending a device racing its renewals', () => {
  it(`the session ends whatever the order, and no refresh token of it works afterwards (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const laptop = await signIn(t.app, p);
      const phone = await signIn(t.app, p);
      const phoneId = await sessionIdOf(phone.accessToken);

      const [ended, renewed] = await race(2, (i) =>
        i === 0 ? revoke(laptop.accessToken, phoneId) : renew(t.app, phone.refreshToken),
      );
      expect(ended.statusCode, ended.body).toBe(204);
      expect([201, 401]).toContain(renewed.statusCode);

      // Whatever the order: the phone's session is over, with the owner's reason, and neither its
      // old refresh token nor one a winning renewal handed out opens anything.
      const row = await sql<{ revoked_reason: string | null }>`
        SELECT revoked_reason FROM sessions WHERE id = ${phoneId}`.execute(t.ctx.database.db);
      expect(row.rows[0].revoked_reason).toBe('revoked_by_owner');
      const tokens = [phone.refreshToken];
      if (renewed.statusCode === 201) tokens.push(renewed.json().data.refreshToken);
      for (const token of tokens) expect((await renew(t.app, token)).statusCode).toBe(401);
      const access = renewed.statusCode === 201 ? renewed.json().data.accessToken : phone.accessToken;
      expect((await context(t.app, access)).statusCode).toBe(401);
      expect((await context(t.app, laptop.accessToken)).statusCode).toBe(200);
    }
  });

  it(`two devices ending each other: both sessions end, each answer 204 or 401, never more (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const a = await signIn(t.app, p);
      const b = await signIn(t.app, p);
      const [aId, bId] = [await sessionIdOf(a.accessToken), await sessionIdOf(b.accessToken)];
      const answers = await race(2, (i) =>
        i === 0 ? revoke(a.accessToken, bId) : revoke(b.accessToken, aId),
      );
      for (const r of answers) expect([204, 401], r.body).toContain(r.statusCode);
      expect(answers.some((r) => r.statusCode === 204)).toBe(true);
      // The one that answered 204 ended the other; the one refused had been ended before its guard read.
      const live = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${p.identityId} AND revoked_at IS NULL`.execute(
        t.ctx.database.db,
      );
      const both204 = answers.every((r) => r.statusCode === 204);
      expect(live.rows[0].n).toBe(both204 ? 0 : 1);
      const audits = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM audit_records WHERE name = 'identity.session.revoked' AND actor = ${p.identityId}`.execute(
        t.ctx.database.db,
      );
      expect(audits.rows[0].n).toBe(answers.filter((r) => r.statusCode === 204).length);
    }
  });
});
