import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { expectEqualTime, interleaved } from '../helpers/timing.js';

/**
 * POST /password-recoveries answers the same, in the same time, for an address that holds an
 * account (a challenge is written and a message leaves after the answer) and for an unknown one.
 * PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 200;
const WARM_UP = 10;

let t: TestApp;
let person: Person;

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_SENDS_A_MESSAGE: '100000/60' } });
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

describe('POST /password-recoveries timing', () => {
  it(`costs the same for a known and an unknown address (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
    const started = (identifier: string) => async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/password-recoveries',
        payload: { identifierType: 'email', identifier },
      });
      expect(res.statusCode).toBe(201);
    };
    const r = await interleaved(started(person.email), started(unknown), { calls: CALLS, warmUp: WARM_UP });
    expectEqualTime(t, r, ['known address', 'unknown address']);
    // The known address really was sent every code; the unknown one, whose calls were interleaved
    // with them (deliveries leave in order), nothing.
    await waitForCode(t.config.dataDir, person.email, WARM_UP + CALLS);
    expect(messagesTo(t.config.dataDir, person.email).length).toBe(WARM_UP + CALLS);
    expect(messagesTo(t.config.dataDir, unknown)).toEqual([]);
  }, 120_000);
});
