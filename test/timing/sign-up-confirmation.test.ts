import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { lastCode } from '../helpers/outbox.js';
import { attemptsCharged, expectEqualTime, interleaved, oneIsLive, wrongCode } from '../helpers/timing.js';

/**
 * Issue 11 item 6: POST /sign-ups/confirmations must not tell an address with a pending
 * registration (a live code, so a wrong one is charged and counted on the lock) from an unknown
 * address by its answer time. Both pay one Argon2id verify (a burn when no code matched), at the
 * production floor's 19 MiB. PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 200;

let t: TestApp;
const pending = `pending-${randomBytes(6).toString('hex')}@example.com`;
const password = 'the password of this registration';

beforeAll(async () => {
  t = await createTestApp({
    env: {
      ARGON2_MEMORY_KIB: '19456',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000/60',
      RATE_LIMIT_SENDS_A_MESSAGE: '100000/60',
      RATE_LIMIT_PROVES_A_PASSWORD: '100000/60',
    },
  });
});
afterAll(async () => {
  await t.close();
});

const sentCodes = new Set<string>();

/** Another registration of the pending address when the misses have spent the last live code. */
async function register(): Promise<void> {
  if (await oneIsLive(t.ctx, 'sign_up')) return;
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ups',
    payload: { identifierType: 'email', identifier: pending, password },
  });
  expect(res.statusCode).toBe(201);
  sentCodes.add(lastCode(t.config.dataDir, pending));
}

describe('POST /sign-ups/confirmations timing', () => {
  it(`a wrong code for a pending address and any code for an unknown one cost the same (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(6).toString('hex')}@example.com`;
    const refused = (identifier: string) => async () => {
      const payload = { identifierType: 'email', identifier, password, code: wrongCode(sentCodes) };
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/sign-ups/confirmations', payload });
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('identity.verification_refused');
    };
    const r = await interleaved(refused(pending), refused(unknown), {
      calls: CALLS,
      warmUp: 10,
      prepare: register,
    });
    expect(await attemptsCharged(t.ctx, 'sign_up')).toBeGreaterThanOrEqual(CALLS + 10);
    expectEqualTime(t, r, ['pending address', 'unknown address'], 3);
  }, 240_000);
});
