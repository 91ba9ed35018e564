import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import {
  DEFAULT_POLICY,
  expectIdentical,
  isLocked,
  lastOutboxCode,
  outboxCount,
  personWithFactor,
  post,
  totp,
  wrongCode,
} from '../second-factors/helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

async function start(token: string, payload?: unknown) {
  return post(t.app, '/step-ups', { token, payload });
}

describe('POST /step-ups', () => {
  it('defaults to the identifier channel without a factor and sends the code to the first verified identifier', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const before = outboxCount(t.config.dataDir);
    // No body and no Content-Type at all: treated as {}.
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups',
      headers: bearer(grant.accessToken),
    });
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(Object.keys(data).sort()).toEqual(['challengeExpiresAt', 'challengeId', 'channel', 'sentTo']);
    expect(data.channel).toBe('identifier');
    // Where the code went, masked: the page names it.
    expect(data.sentTo).toBe(`${person.email[0]}***${person.email.slice(person.email.indexOf('@'))}`);
    expect(res.body).not.toContain(person.email);
    expect(new Date(data.challengeExpiresAt).getTime() - t.clock.now().getTime()).toBe(
      t.config.lifetimes.challenge * 1000,
    );
    expect(outboxCount(t.config.dataDir)).toBe(before + 1);
    const code = lastOutboxCode(t.config.dataDir, person.email);
    expect(res.body).not.toContain(code);

    const ok = await post(t.app, '/step-ups/confirmations', {
      token: grant.accessToken,
      payload: { challengeId: data.challengeId, code },
    });
    expect(ok.statusCode, ok.body).toBe(201);
    const elevation = ok.json().data;
    expect(Object.keys(elevation).sort()).toEqual(['elevationExpiresAt', 'elevationToken']);
    expect(elevation.elevationToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Date(elevation.elevationExpiresAt).getTime() - t.clock.now().getTime()).toBe(300_000);
  });

  it('refuses a challengeId in urn:uuid form with 400 (never a 500) and takes one in upper case', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const res = await start(grant.accessToken, {});
    const { challengeId } = res.json().data;
    const code = lastOutboxCode(t.config.dataDir, person.email);
    const confirm = (id: string) =>
      post(t.app, '/step-ups/confirmations', {
        token: grant.accessToken,
        payload: { challengeId: id, code },
      });
    const urn = await confirm(`urn:uuid:${challengeId}`);
    expect({ status: urn.statusCode, code: urn.json().code }).toEqual({
      status: 400,
      code: 'validation.failed',
    });
    expect(urn.body).not.toContain(challengeId);
    const upper = await confirm(challengeId.toUpperCase());
    expect(upper.statusCode, upper.body).toBe(201);
  });

  it('defaults to the second_factor channel when a verified factor exists, sends nothing and confirms with the current code', async () => {
    const { grant, factor } = await personWithFactor(t);
    const before = outboxCount(t.config.dataDir);
    const res = await start(grant.accessToken, {});
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.channel).toBe('second_factor');
    expect(outboxCount(t.config.dataDir)).toBe(before);
    const ok = await post(t.app, '/step-ups/confirmations', {
      token: grant.accessToken,
      payload: {
        challengeId: res.json().data.challengeId,
        code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
      },
    });
    expect(ok.statusCode, ok.body).toBe(201);
    // Holding a factor, owning the mailbox is not enough: the identifier channel is refused and
    // nothing is sent (contract 3).
    const byIdentifier = await start(grant.accessToken, { channel: 'identifier' });
    expect({ status: byIdentifier.statusCode, code: byIdentifier.json().code }).toEqual({
      status: 422,
      code: 'identity.step_up_unavailable',
    });
    expect(outboxCount(t.config.dataDir)).toBe(before);
  });

  it('takes a recovery code on the recovery_code channel when a factor exists, and spends it', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const elevation = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const codes: string[] = (
      await post(t.app, '/recovery-codes', { token: grant.accessToken, elevation })
    ).json().data.recoveryCodes;
    const res = await start(grant.accessToken, { channel: 'recovery_code' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.channel).toBe('recovery_code');
    const confirm = (challengeId: string, code: string) =>
      post(t.app, '/step-ups/confirmations', { token: grant.accessToken, payload: { challengeId, code } });
    const ok = await confirm(res.json().data.challengeId, codes[0]);
    expect(ok.statusCode, ok.body).toBe(201);
    // Spent: the same code does not confirm a second step-up.
    const again = await start(grant.accessToken, { channel: 'recovery_code' });
    expect((await confirm(again.json().data.challengeId, codes[0])).statusCode).toBe(403);
    // Without a factor the channel is unavailable.
    const plain = await signIn(t.app, await createPerson(t.ctx));
    const none = await start(plain.accessToken, { channel: 'recovery_code' });
    expect({ status: none.statusCode, code: none.json().code }).toEqual({
      status: 422,
      code: 'identity.step_up_unavailable',
    });
  });

  it('answers 422 identity.step_up_unavailable when the asked channel cannot be used', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const noFactor = await start(grant.accessToken, { channel: 'second_factor' });
    expect(noFactor.statusCode).toBe(422);
    expect(noFactor.json().code).toBe('identity.step_up_unavailable');
    // An identity whose only identifier is removed has no identifier channel either.
    await sql`UPDATE identifiers SET removed_at = now() WHERE identity_id = ${person.identityId}`.execute(
      t.ctx.database.db,
    );
    const none = await start(grant.accessToken, {});
    expect(none.statusCode).toBe(422);
    expect(none.body).toBe(noFactor.body);
  });

  it('refuses unknown properties and channels, and requires a session', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    for (const payload of [{ channel: 'sms' }, { channel: 'identifier', extra: 1 }]) {
      const res = await start(grant.accessToken, payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation.failed');
    }
    const anonymous = await post(t.app, '/step-ups', { payload: {} });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('identity.session_required');
  });
});

describe('POST /step-ups/confirmations refusals', () => {
  it('answers the identical 403 for a wrong code and an unknown, spent, expired, replaced or foreign challenge', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const other = await signIn(t.app, person);
    const stranger = await createPerson(t.ctx);
    const strangerGrant = await signIn(t.app, stranger);
    const confirm = (token: string, challengeId: string, code: string) =>
      post(t.app, '/step-ups/confirmations', { token, payload: { challengeId, code } });

    const refusals = [];
    // Wrong code on a live challenge.
    const live = (await start(grant.accessToken, {})).json().data.challengeId;
    const liveCode = lastOutboxCode(t.config.dataDir, person.email);
    refusals.push(await confirm(grant.accessToken, live, liveCode === '000000' ? '111111' : '000000'));
    // Unknown challenge.
    refusals.push(await confirm(grant.accessToken, '00000000-0000-4000-8000-000000000000', liveCode));
    // Foreign: another session of the same identity, and another identity.
    refusals.push(await confirm(other.accessToken, live, liveCode));
    refusals.push(await confirm(strangerGrant.accessToken, live, liveCode));
    // Spent: the right code once, then again.
    expect((await confirm(grant.accessToken, live, liveCode)).statusCode).toBe(201);
    refusals.push(await confirm(grant.accessToken, live, liveCode));
    // Replaced by a newer step-up of the same session.
    const first = (await start(grant.accessToken, {})).json().data.challengeId;
    const firstCode = lastOutboxCode(t.config.dataDir, person.email);
    await start(grant.accessToken, {});
    refusals.push(await confirm(grant.accessToken, first, firstCode));
    // Expired.
    const late = (await start(grant.accessToken, {})).json().data.challengeId;
    const lateCode = lastOutboxCode(t.config.dataDir, person.email);
    t.clock.advance(t.config.lifetimes.challenge);
    // The access token's life equals the challenge's: renew so only the challenge has expired.
    const renewed = await post(t.app, '/sign-ins/renewals', {
      payload: { refreshToken: grant.refreshToken },
    });
    expect(renewed.statusCode, renewed.body).toBe(201);
    refusals.push(await confirm(renewed.json().data.accessToken, late, lateCode));

    expectIdentical(refusals, 403, 'identity.step_up_confirmation_refused');
    expect(refusals[0].body).not.toContain(liveCode);
  });

  it('lets a challenge take 5 attempts, counts wrong codes on the identity lock, and answers 423 only when already locked', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const challengeId = (await start(grant.accessToken, {})).json().data.challengeId;
    const code = lastOutboxCode(t.config.dataDir, person.email);
    const wrong = code === '000000' ? '111111' : '000000';
    const confirm = (id: string, c: string) =>
      post(t.app, '/step-ups/confirmations', {
        token: grant.accessToken,
        payload: { challengeId: id, code: c },
      });
    for (let i = 1; i <= 5; i++) {
      const res = await confirm(challengeId, wrong);
      // The failure that trips the lock is still the ordinary refusal.
      expect(res.statusCode, `attempt ${i}`).toBe(403);
    }
    expect(await isLocked(t, person.identityId)).toBe(true);
    // The challenge is exhausted: even the right code is refused, without 423.
    const exhausted = await confirm(challengeId, code);
    expect(exhausted.statusCode).toBe(403);

    const next = (await start(grant.accessToken, {})).json().data.challengeId;
    const nextCode = lastOutboxCode(t.config.dataDir, person.email);
    const locked = await confirm(next, nextCode === '000000' ? '111111' : '000000');
    expect(locked.statusCode).toBe(423);
    expect(locked.json().code).toBe('identity.step_up_locked');
    // A correct code mints even on the locked account, and does not clear the lock.
    const ok = await confirm(next, nextCode);
    expect(ok.statusCode, ok.body).toBe(201);
    expect(await isLocked(t, person.identityId)).toBe(true);
  });

  it('answers the locked refusal to a first wrong guess on an account locked elsewhere', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    // Five wrong enrolment confirmations (nothing pending) lock the account on another route.
    for (let i = 0; i < 5; i++) {
      await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: '123456' },
      });
    }
    expect(await isLocked(t, person.identityId)).toBe(true);
    const challengeId = (await start(grant.accessToken, {})).json().data.challengeId;
    const res = await post(t.app, '/step-ups/confirmations', {
      token: grant.accessToken,
      payload: { challengeId, code: wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now()) },
    });
    expect(res.statusCode).toBe(423);
    expect(res.json().code).toBe('identity.step_up_locked');
  });

  it('refuses an authenticator code already used in its time step', async () => {
    const { grant, factor } = await personWithFactor(t);
    const code = totp(factor.secret, DEFAULT_POLICY, t.clock.now());
    const a = (await start(grant.accessToken, {})).json().data.challengeId;
    expect(
      (
        await post(t.app, '/step-ups/confirmations', {
          token: grant.accessToken,
          payload: { challengeId: a, code },
        })
      ).statusCode,
    ).toBe(201);
    const b = (await start(grant.accessToken, {})).json().data.challengeId;
    const replay = await post(t.app, '/step-ups/confirmations', {
      token: grant.accessToken,
      payload: { challengeId: b, code },
    });
    expect(replay.statusCode).toBe(403);
    t.clock.advance(DEFAULT_POLICY.period);
    const fresh = await post(t.app, '/step-ups/confirmations', {
      token: grant.accessToken,
      payload: { challengeId: b, code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()) },
    });
    expect(fresh.statusCode, fresh.body).toBe(201);
  });

  it('refuses a malformed body with 400', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    for (const payload of [
      { challengeId: 'not-a-uuid', code: '123456' },
      { challengeId: '00000000-0000-4000-8000-000000000000', code: ' 123456' },
      { challengeId: '00000000-0000-4000-8000-000000000000' },
    ]) {
      const res = await post(t.app, '/step-ups/confirmations', { token: grant.accessToken, payload });
      expect(res.statusCode).toBe(400);
    }
  });
});

describe('elevation guard', () => {
  const elevatedRoutes = [
    '/second-factors',
    '/recovery-codes',
    '/second-factors/00000000-0000-4000-8000-000000000000/removals',
  ];

  it('admits a live elevation of the same session for several writes within its life', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const elevation = await elevate(t, grant.accessToken, person.email);
    expect((await post(t.app, '/recovery-codes', { token: grant.accessToken, elevation })).statusCode).toBe(
      201,
    );
    t.clock.advance(299);
    expect((await post(t.app, '/recovery-codes', { token: grant.accessToken, elevation })).statusCode).toBe(
      201,
    );
    expect(
      (await post(t.app, '/second-factors', { token: grant.accessToken, elevation, payload: {} })).statusCode,
    ).toBe(201);
  });

  it('answers the identical 403 for a missing, unknown, expired or foreign elevation on every elevated route', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const other = await signIn(t.app, person);
    const stranger = await createPerson(t.ctx);
    const strangerGrant = await signIn(t.app, stranger);
    const otherElevation = await elevate(t, other.accessToken, person.email);
    const strangerElevation = await elevate(t, strangerGrant.accessToken, stranger.email);
    const expiring = await elevate(t, grant.accessToken, person.email);
    t.clock.advance(300);

    const refusals = [];
    for (const url of elevatedRoutes) {
      const payload = url === '/second-factors' ? {} : undefined;
      refusals.push(await post(t.app, url, { token: grant.accessToken, payload }));
      refusals.push(await post(t.app, url, { token: grant.accessToken, payload, elevation: 'x'.repeat(43) }));
      refusals.push(await post(t.app, url, { token: grant.accessToken, payload, elevation: expiring }));
      refusals.push(await post(t.app, url, { token: grant.accessToken, payload, elevation: otherElevation }));
      refusals.push(
        await post(t.app, url, { token: grant.accessToken, payload, elevation: strangerElevation }),
      );
    }
    expectIdentical(refusals, 403, 'identity.elevation_required');
    // Nothing was written by a refused request.
    const codes = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM recovery_codes WHERE identity_id = ${person.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(codes.rows[0].n).toBe(0);
  });

  it('checks the session first: a dead session answers 401 even with its elevation', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const elevation = await elevate(t, grant.accessToken, person.email);
    expect((await post(t.app, '/sign-outs', { token: grant.accessToken })).statusCode).toBe(204);
    for (const url of elevatedRoutes) {
      const res = await post(t.app, url, {
        token: grant.accessToken,
        elevation,
        payload: url === '/second-factors' ? {} : undefined,
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('identity.session_required');
    }
    // A fresh session of the same identity cannot borrow it either.
    const fresh = await signIn(t.app, person);
    const res = await post(t.app, '/recovery-codes', { token: fresh.accessToken, elevation });
    expect(res.statusCode).toBe(403);
  });

  it('refuses an elevation token presented as a Bearer credential with the session refusal', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const elevation = await elevate(t, grant.accessToken, person.email);
    const asBearer = await post(t.app, '/recovery-codes', { token: elevation, elevation });
    const none = await post(t.app, '/recovery-codes', { elevation });
    expect(asBearer.statusCode).toBe(401);
    expect(asBearer.body).toBe(none.body);
    expect(asBearer.json().code).toBe('identity.session_required');
  });
});
