import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { bearer, createPerson, signIn } from '../../helpers/identities.js';
import { lastCode, messagesTo, waitForCode } from '../../helpers/outbox.js';
import {
  confirm as confirmSignUp,
  emailForm,
  otherCode,
  PASSWORD,
  signUp,
  uniqueEmail,
} from '../../registration/helpers.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  enrolVerified,
  personWithFactor,
  post,
  ticketFor,
  totp,
  wrongCode,
} from '../../second-factors/helpers.js';
import { signInRaw } from '../../sessions/support.js';

// The defaults of contract 7 for guesses (10 free failures, up to 8 hours between attempts); the
// per-address limits stay out of the way so only the budgets are measured.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_GUESSES: '' } });
});
afterAll(async () => {
  await t.close();
});

function expectEarly(res: LightMyRequestResponse, retryAfter: number) {
  expect({ status: res.statusCode, code: res.json().code, retryable: res.json().retryable }).toEqual({
    status: 429,
    code: 'rate_limit.exceeded',
    retryable: true,
  });
  expect(res.headers['retry-after']).toBe(String(retryAfter));
}

async function stepUpAttempt(token: string, code: (now: Date) => string) {
  const start = await post(t.app, '/step-ups', { token, payload: {} });
  expect(start.statusCode, start.body).toBe(201);
  return post(t.app, '/step-ups/confirmations', {
    token,
    payload: { challengeId: start.json().data.challengeId, code: code(t.clock.now()) },
  });
}

describe('per-identity guess budget on step-up (a stolen session, any number of addresses)', () => {
  it('admits 10 failures, then answers 429 with Retry-After even to the right code, unchecked; waits grow', async () => {
    expect(t.config.rateLimits.guesses).toEqual({ free: 10, maxDelaySeconds: 12 * 3600 });
    const { grant, factor } = await personWithFactor(t);
    const wrong = (now: Date) => wrongCode(factor.secret, DEFAULT_POLICY, now);
    const right = (now: Date) => totp(factor.secret, DEFAULT_POLICY, now);
    // Ten wrong codes get the interface's own answers (403, then 423 once the lock trips).
    for (let i = 0; i < 10; i++) {
      const res = await stepUpAttempt(grant.accessToken, wrong);
      expect([403, 423]).toContain(res.statusCode);
    }
    // The eleventh, right or wrong, comes too early: 429, and the right code mints nothing.
    expectEarly(await stepUpAttempt(grant.accessToken, right), 1);
    t.clock.advance(1);
    // In time, a wrong one is checked again and the next wait doubles.
    expect([403, 423]).toContain((await stepUpAttempt(grant.accessToken, wrong)).statusCode);
    expectEarly(await stepUpAttempt(grant.accessToken, right), 2);
    t.clock.advance(2);
    // In time, the right code is admitted (the lock is not consulted for it) and forgives the count.
    const ok = await stepUpAttempt(grant.accessToken, right);
    expect(ok.statusCode, ok.body).toBe(201);
    t.clock.advance(DEFAULT_POLICY.period);
    for (let i = 0; i < 10; i++) {
      expect((await stepUpAttempt(grant.accessToken, wrong)).statusCode).not.toBe(429);
    }
  });

  it('counts every session of the identity together, and sign-out everywhere starts it afresh', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const thief = await signIn(t.app, person);
    const factor = await enrolVerified(t, person, grant, DEFAULT_POLICY);
    const wrong = (now: Date) => wrongCode(factor.secret, DEFAULT_POLICY, now);
    for (let i = 0; i < 5; i++) await stepUpAttempt(grant.accessToken, wrong);
    for (let i = 0; i < 5; i++) await stepUpAttempt(thief.accessToken, wrong);
    expectEarly(await stepUpAttempt(grant.accessToken, wrong), 1);
    // The owner signs out everywhere: the thief's session is gone and the budget is whole again.
    const out = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/everywhere',
      headers: bearer(grant.accessToken),
    });
    expect(out.statusCode).toBe(204);
    const second = await completeSignIn(t.app, {
      secondFactorTicket: await ticketFor(t.app, person),
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(second.statusCode, second.body).toBe(201);
    t.clock.advance(DEFAULT_POLICY.period);
    const ok = await stepUpAttempt(second.json().data.accessToken, (now) =>
      totp(factor.secret, DEFAULT_POLICY, now),
    );
    expect(ok.statusCode, ok.body).toBe(201);
  });
});

describe('password sign-ins: per identifier and address prefix', () => {
  it("a stranger's failures from elsewhere never hold back the owner's correct password", async () => {
    const person = await createPerson(t.ctx);
    for (let i = 0; i < 10; i++) {
      expect(
        (await signInRaw(t.app, person.email, 'wrong password of a stranger', '198.51.100.7')).statusCode,
      ).toBe(401);
    }
    expectEarly(await signInRaw(t.app, person.email, person.password, '198.51.100.7'), 1);
    // The same /64 is one bucket; another address is not.
    for (let i = 0; i < 10; i++) await signInRaw(t.app, person.email, 'wrong', '2001:db8:7:7::1');
    expectEarly(await signInRaw(t.app, person.email, person.password, '2001:db8:7:7:ffff::2'), 1);
    const owner = await signInRaw(t.app, person.email, person.password, '203.0.113.20');
    expect(owner.statusCode, owner.body).toBe(201);
  });

  it('answers an unknown address exactly as a known one, 429 included', async () => {
    const person = await createPerson(t.ctx);
    const unknown = uniqueEmail('nobody');
    const answers: LightMyRequestResponse[][] = [[], []];
    for (let i = 0; i < 11; i++) {
      answers[0].push(await signInRaw(t.app, person.email, 'not the password', '198.51.100.8'));
      answers[1].push(await signInRaw(t.app, unknown, 'not the password', '198.51.100.8'));
    }
    const shape = (r: LightMyRequestResponse) => [r.statusCode, r.headers['retry-after'], r.body];
    expect(answers[0].map(shape)).toEqual(answers[1].map(shape));
    expect(answers[0][10].statusCode).toBe(429);
  });
});

describe('codes sent to an address: per identifier, known account or not', () => {
  it('sign-up confirmation: ten wrong codes, then even the right one waits', async () => {
    const address = uniqueEmail('budget-signup');
    expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
    const code = lastCode(t.config.dataDir, address);
    for (let i = 0; i < 10; i++) {
      const res = await confirmSignUp(t.app, {
        ...emailForm(address),
        password: PASSWORD,
        code: otherCode(code),
      });
      expect(res.statusCode).toBe(422);
    }
    expectEarly(await confirmSignUp(t.app, { ...emailForm(address), password: PASSWORD, code }), 1);
    // In time, a fresh code (that challenge spent its five attempts) confirms.
    t.clock.advance(1);
    expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
    const fresh = lastCode(t.config.dataDir, address);
    const ok = await confirmSignUp(t.app, { ...emailForm(address), password: PASSWORD, code: fresh });
    expect(ok.statusCode, ok.body).toBe(204);
  });
});

describe('the current password at POST /password-changes: per identity (a stolen access token)', () => {
  function change(accessToken: string, currentPassword: string, ip: string) {
    return t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      remoteAddress: ip,
      headers: bearer(accessToken),
      payload: { currentPassword, newPassword: `a new long password ${ip}` },
    });
  }

  it('admits 10 wrong passwords from any addresses, then even the right one waits, unchecked', async () => {
    const person = await createPerson(t.ctx);
    const thief = await signIn(t.app, person);
    for (let i = 0; i < 10; i++) {
      const res = await change(thief.accessToken, `wrong guess ${i}`, `203.0.113.${i + 1}`);
      expect(res.statusCode, res.body).toBe(422);
    }
    // The lock counted them (threshold 5): the password oracle also trips the identity-wide lock.
    const row = await t.ctx.database.db
      .selectFrom('identities')
      .select(['failed_attempts', 'locked_until'])
      .where('id', '=', person.identityId)
      .executeTakeFirstOrThrow();
    expect(row.locked_until).not.toBeNull();
    // From yet another address, the right password is too early: 429, and the password is unchanged.
    expectEarly(await change(thief.accessToken, person.password, '198.51.100.99'), 1);
    expect((await signInRaw(t.app, person.email, person.password, '192.0.2.1')).statusCode).toBe(201);
    t.clock.advance(1);
    expect((await change(thief.accessToken, 'wrong again', '198.51.100.98')).statusCode).toBe(422);
    expectEarly(await change(thief.accessToken, person.password, '198.51.100.97'), 2);
    t.clock.advance(2);
    // In time, the right password is checked (the lock is not consulted) and forgives the count.
    const owner = await signIn(t.app, person);
    const ok = await change(owner.accessToken, person.password, '198.51.100.96');
    expect(ok.statusCode, ok.body).toBe(204);
  });
});

describe("a stranger's failures against an owner's address age out", () => {
  const recoveryStart = (address: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries',
      payload: { identifierType: 'email', identifier: address },
    });
  const recoveryConfirm = (address: string, code: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries/confirmations',
      payload: {
        identifierType: 'email',
        identifier: address,
        code,
        newPassword: 'a recovered long password',
      },
    });

  /** A stranger who knows only the address guesses `n` times, each the moment its wait ends. */
  async function hammer(address: string, n: number): Promise<void> {
    for (let admitted = 0; admitted < n; ) {
      const res = await recoveryConfirm(address, '000000');
      if (res.statusCode === 429) {
        t.clock.advance(Number(res.headers['retry-after']));
        continue;
      }
      expect(res.statusCode).toBe(422);
      admitted++;
    }
  }

  it('forgets the count after thirty longest waits without an attempt: ten free again', async () => {
    const { maxDelaySeconds } = t.config.rateLimits.guesses;
    const person = await createPerson(t.ctx);
    await hammer(person.email, 27);
    // Fully ramped: the next attempt waits the longest delay.
    const early = await recoveryConfirm(person.email, '000000');
    expect(early.statusCode).toBe(429);
    expect(Number(early.headers['retry-after'])).toBe(maxDelaySeconds);
    t.clock.advance(30 * maxDelaySeconds);
    for (let i = 0; i < 10; i++) expect((await recoveryConfirm(person.email, '000000')).statusCode).toBe(422);
    expectEarly(await recoveryConfirm(person.email, '000000'), 1);
  });

  it("keeps the owner from a freshly sent code no longer than the longest wait after the stranger's last failure", async () => {
    // Every wait ends within the longest delay of the last admitted failure; a code sent after it
    // is admitted at once (docs/security.md "What a stranger can do to an owner").
    const { maxDelaySeconds } = t.config.rateLimits.guesses;
    const person = await createPerson(t.ctx);
    await hammer(person.email, 30);
    const before = messagesTo(t.config.dataDir, person.email).length;
    expect((await recoveryStart(person.email)).statusCode).toBe(201);
    const code = await waitForCode(t.config.dataDir, person.email, before + 1);
    const blocked = await recoveryConfirm(person.email, code);
    expect(blocked.statusCode).toBe(429);
    const wait = Number(blocked.headers['retry-after']);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(maxDelaySeconds);
    t.clock.advance(wait);
    // The code sent before the wait has expired by now (15 minutes); one sent now is admitted.
    expect((await recoveryStart(person.email)).statusCode).toBe(201);
    const fresh = await waitForCode(t.config.dataDir, person.email, before + 2);
    const ok = await recoveryConfirm(person.email, fresh);
    expect(ok.statusCode, ok.body).toBe(204);
  });
});
