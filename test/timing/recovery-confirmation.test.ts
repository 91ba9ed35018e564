import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { attemptsCharged, expectEqualTime, interleaved, oneIsLive, wrongCode } from '../helpers/timing.js';

/**
 * Issue 11 item 6: POST /password-recoveries/confirmations must not tell an address that holds an
 * account (and a live recovery code, so a wrong code is charged and counted on the lock) from an
 * unknown one by its answer time. PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 200;

let t: TestApp;
let person: Person;

beforeAll(async () => {
  t = await createTestApp({
    env: { ARGON2_MEMORY_KIB: '19456', RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000/60' },
  });
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

const issuedCodes = new Set<string>();
/**
 * One live recovery code for the person, issued as POST /password-recoveries would (no mail) when
 * the last one is spent by the misses.
 */
async function liveRecoveryCode(): Promise<void> {
  if (await oneIsLive(t.ctx, 'password_recovery')) return;
  const { identifier_id, identity_id } = await t.ctx.database.db
    .selectFrom('identifiers')
    .select(['id as identifier_id', 'identity_id'])
    .where('value', '=', person.email)
    .executeTakeFirstOrThrow();
  const issued = await t.ctx.database.db.transaction().execute((trx) =>
    t.ctx.challenges.issue(trx, {
      purpose: 'password_recovery',
      identityId: identity_id,
      identifierId: identifier_id,
    }),
  );
  issuedCodes.add(issued.code!);
}

describe('POST /password-recoveries/confirmations timing', () => {
  it(`a wrong code for a known address and any code for an unknown one cost the same (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(6).toString('hex')}@example.com`;
    const refused = (identifier: string) => async () => {
      const payload = {
        identifierType: 'email',
        identifier,
        code: wrongCode(issuedCodes),
        newPassword: 'a new password of some length',
      };
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/password-recoveries/confirmations',
        payload,
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('identity.password_recovery_refused');
    };
    const r = await interleaved(refused(person.email), refused(unknown), {
      calls: CALLS,
      warmUp: 10,
      prepare: liveRecoveryCode,
    });
    // The known address's refusals really were charged: each of its misses cost a live code an attempt.
    expect(await attemptsCharged(t.ctx, 'password_recovery')).toBeGreaterThanOrEqual(CALLS + 10);
    expectEqualTime(t, r, ['known address', 'unknown address']);
  }, 180_000);
});
