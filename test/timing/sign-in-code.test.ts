import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { expectEqualTime, interleaved } from '../helpers/timing.js';

/**
 * Issue 45: POST /sign-ins/codes answers the same, in the same time, for an address that may sign
 * in by code (a challenge is written, the previous one ended, and a message leaves after the
 * answer) and for one that may not: unknown, or held by a disabled identity. PostgreSQL when
 * TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 200;
const WARM_UP = 10;

let t: TestApp;
let person: Person;
let disabled: Person;

beforeAll(async () => {
  t = await createTestApp({ env: { SIGN_IN_CODES: 'email', RATE_LIMIT_SENDS_A_MESSAGE: '100000/60' } });
  person = await createPerson(t.ctx);
  disabled = await createPerson(t.ctx);
  await t.ctx.database.db
    .updateTable('identities')
    .set({ disabled_at: t.clock.now() })
    .where('id', '=', disabled.identityId)
    .execute();
});
afterAll(async () => {
  await t.close();
});

const sent = (identifier: string) => async () => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins/codes',
    payload: { identifierType: 'email', identifier },
  });
  expect(res.statusCode).toBe(201);
};

describe('POST /sign-ins/codes timing', () => {
  it(`costs the same for a known and an unknown address (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
    const r = await interleaved(sent(person.email), sent(unknown), { calls: CALLS, warmUp: WARM_UP });
    expectEqualTime(t, r, ['known address', 'unknown address']);
    // The known address really was sent every code; the unknown one nothing.
    await waitForCode(t.config.dataDir, person.email, WARM_UP + CALLS);
    expect(messagesTo(t.config.dataDir, person.email).length).toBe(WARM_UP + CALLS);
    expect(messagesTo(t.config.dataDir, unknown)).toEqual([]);
  }, 120_000);

  it(`costs the same for a known address and a disabled identity's (${CALLS} interleaved calls each)`, async () => {
    const before = messagesTo(t.config.dataDir, person.email).length;
    const r = await interleaved(sent(person.email), sent(disabled.email), { calls: CALLS, warmUp: WARM_UP });
    expectEqualTime(t, r, ['known address', 'disabled identity']);
    await waitForCode(t.config.dataDir, person.email, before + WARM_UP + CALLS);
    expect(messagesTo(t.config.dataDir, disabled.email)).toEqual([]);
  }, 120_000);
});
