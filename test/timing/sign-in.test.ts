import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { expectEqualTime, interleaved } from '../helpers/timing.js';

/**
 * Issue 7 item 5, issue 11 item 6: POST /sign-ins must not tell an unknown account from a wrong
 * password by its answer time. Real Argon2id parameters (19 MiB, the production floor), so the
 * dummy verify of the unknown path costs what a real verify costs; PostgreSQL when
 * TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 200;

let t: TestApp;
let person: Person;

beforeAll(async () => {
  t = await createTestApp({
    env: { ARGON2_MEMORY_KIB: '19456', RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' },
  });
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

describe('POST /sign-ins timing', () => {
  it(`an unknown account and a wrong password cost the same (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(6).toString('hex')}@example.com`;
    const refused = (identifier: string) => async () => {
      const payload = {
        identifierType: 'email',
        identifier,
        password: `wrong password ${randomBytes(4).toString('hex')}`,
      };
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/sign-ins', payload });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('identity.sign_in_refused');
    };
    const r = await interleaved(refused(person.email), refused(unknown), { calls: CALLS, warmUp: 10 });
    expectEqualTime(t, r, ['wrong password', 'unknown account'], 3);
  }, 180_000);
});
