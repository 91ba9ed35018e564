import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { expectEqualTime, interleaved } from '../helpers/timing.js';

/**
 * Sign-up by code (docs/api.md, "Sign up by code"): POST /sign-ups without a password answers the
 * same 201, in the same time, for a new address and for one its owner verified long ago (who is
 * sent a code that signs in, where a new address is sent the sign-up code). Each answer awaits its
 * one delivery on both paths. PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 100;
const WARM_UP = 10;

let t: TestApp;
let owner: Person;

beforeAll(async () => {
  t = await createTestApp({
    env: { SIGN_IN_CODES: 'email', SIGN_IN_CODES_SIGN_UP: 'on', RATE_LIMIT_SENDS_A_MESSAGE: '100000/60' },
  });
  owner = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

const signUp = (identifier: () => string) => async () => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ups',
    payload: { identifierType: 'email', identifier: identifier() },
  });
  expect(res.statusCode).toBe(201);
};

describe('POST /sign-ups without a password: timing', () => {
  it(`costs the same for an owner's verified address and a new one (${CALLS} interleaved calls each)`, async () => {
    const fresh = () => `new-${randomBytes(6).toString('hex')}@example.com`;
    const r = await interleaved(
      signUp(() => owner.email),
      signUp(fresh),
      { calls: CALLS, warmUp: WARM_UP },
    );
    expectEqualTime(t, r, ["owner's verified address", 'new address']);
    // The owner really was sent a code every time (SIGN_IN_CODES_WITH_PASSWORD on: a code that signs in).
    await waitForCode(t.config.dataDir, owner.email, WARM_UP + CALLS);
    expect(messagesTo(t.config.dataDir, owner.email).every((m) => m.subject === 'Your sign-in code')).toBe(
      true,
    );
  }, 120_000);
});
