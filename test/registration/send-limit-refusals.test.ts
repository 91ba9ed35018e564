import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { messagesTo } from '../helpers/outbox.js';
import { emailForm, PASSWORD, uniqueEmail } from './helpers.js';

// Issue 27, broken item 7: requests to a sending route that send nothing do not spend
// RATE_LIMIT_SENDS_A_MESSAGE, but a 409 says an address is registered, so they are still bounded:
// every request to the route counts against the wider RATE_LIMIT_ANSWERS_A_CHALLENGE per client
// address and route (answered before the body is read).
const WIDE = 4;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    env: { RATE_LIMIT_SENDS_A_MESSAGE: '1000/900', RATE_LIMIT_ANSWERS_A_CHALLENGE: `${WIDE}/60` },
  });
});
afterAll(async () => {
  await t?.close();
});

const signUp = (from: string, address: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ups',
    payload: { ...emailForm(address), password: PASSWORD },
    remoteAddress: from,
  });

describe('POST /sign-ups: requests that send nothing are bounded per client address', () => {
  it(`an enumerator's ${WIDE} 409s from one address reach the wider limit: the next request is 429 with Retry-After and sends nothing`, async () => {
    const taken = await Promise.all(Array.from({ length: WIDE }, () => createPerson(t.ctx)));
    const from = '192.0.2.10';
    for (const p of taken) expect((await signUp(from, p.email)).statusCode).toBe(409);

    const address = uniqueEmail('after-enumeration');
    const refused = await signUp(from, address);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().code).toBe('rate_limit.exceeded');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(messagesTo(t.config.dataDir, address)).toHaveLength(0);

    // Another client address is not affected, and sends.
    expect((await signUp('192.0.2.11', address)).statusCode).toBe(201);
    expect(messagesTo(t.config.dataDir, address)).toHaveLength(1);
  });
});
