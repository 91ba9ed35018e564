import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { messagesTo } from '../helpers/outbox.js';
import { emailForm, PASSWORD, uniqueEmail } from './helpers.js';

// Issue 27, broken item 7: requests to a sending route that send nothing do not spend
// RATE_LIMIT_SENDS_A_MESSAGE, but a 409 says an address is registered, so they are still bounded:
// every request to the route counts against the wider RATE_LIMIT_ANSWERS_A_CHALLENGE per client
// address and route (answered before the body is read), or against RATE_LIMIT_SENDS_A_MESSAGE when
// an operator raised that one above it.
const WIDE = 4;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    env: { RATE_LIMIT_SENDS_A_MESSAGE: `${WIDE}/900`, RATE_LIMIT_ANSWERS_A_CHALLENGE: `${WIDE}/60` },
  });
});
afterAll(async () => {
  await t?.close();
});

const signUp = (from: string, address: string, app = t) =>
  app.app.inject({
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

describe('POST /sign-ups: a send limit raised above the wider limit is not capped by it', () => {
  it(`with RATE_LIMIT_SENDS_A_MESSAGE at ${WIDE * 3}/60 and RATE_LIMIT_ANSWERS_A_CHALLENGE at ${WIDE}/60, one address sends ${WIDE * 3} codes, then 429`, async () => {
    const raised = await createTestApp({
      env: { RATE_LIMIT_SENDS_A_MESSAGE: `${WIDE * 3}/60`, RATE_LIMIT_ANSWERS_A_CHALLENGE: `${WIDE}/60` },
    });
    try {
      const from = '192.0.2.20';
      for (let i = 0; i < WIDE * 3; i++) {
        const address = uniqueEmail(`raised-${i}`);
        expect((await signUp(from, address, raised)).statusCode).toBe(201);
        expect(messagesTo(raised.config.dataDir, address)).toHaveLength(1);
      }
      const over = uniqueEmail('raised-over');
      expect((await signUp(from, over, raised)).statusCode).toBe(429);
      expect(messagesTo(raised.config.dataDir, over)).toHaveLength(0);
    } finally {
      await raised.close();
    }
  });
});
