import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { attemptsCharged, expectEqualTime, interleaved, oneIsLive, wrongCode } from '../helpers/timing.js';

/**
 * Issue 45: POST /sign-ins/codes/{id} must not tell a wrong code at a live code's id (charged,
 * counted on the lock, recorded in the history) from a code at an id of nothing for an unknown
 * address by its answer time. PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 200;

let t: TestApp;
let person: Person;
let liveId = '';
const sentCodes = new Set<string>();

beforeAll(async () => {
  t = await createTestApp({
    env: {
      SIGN_IN_CODES: 'email',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000/60',
      RATE_LIMIT_SENDS_A_MESSAGE: '100000/60',
      RATE_LIMIT_GUESSES: '100000/1',
    },
  });
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

/** A new code when the misses have spent the live one. */
async function send(): Promise<void> {
  if (await oneIsLive(t.ctx, 'sign_in')) return;
  const before = messagesTo(t.config.dataDir, person.email).length;
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins/codes',
    payload: { identifierType: 'email', identifier: person.email },
  });
  expect(res.statusCode).toBe(201);
  liveId = res.json().data.signInCodeId;
  sentCodes.add(await waitForCode(t.config.dataDir, person.email, before + 1));
}

describe('POST /sign-ins/codes/{id} timing', () => {
  it(`a wrong code at a live id and a code at an id of nothing cost the same (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(6).toString('hex')}@example.com`;
    const refused = (identifier: string, id: () => string) => async () => {
      const payload = { identifierType: 'email', identifier, code: wrongCode(sentCodes) };
      const res = await t.app.inject({ method: 'POST', url: `/api/v1/sign-ins/codes/${id()}`, payload });
      expect(res.statusCode).toBe(401);
    };
    const r = await interleaved(
      refused(person.email, () => liveId),
      refused(unknown, () => randomUUID()),
      { calls: CALLS, warmUp: 10, prepare: send },
    );
    expect(await attemptsCharged(t.ctx, 'sign_in')).toBeGreaterThanOrEqual(CALLS + 10);
    expectEqualTime(t, r, ['live code', 'id of nothing']);
  }, 240_000);
});
