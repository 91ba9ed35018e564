import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { outbox } from '../helpers/outbox.js';

// A step-up that sends a message counts against SENDS_A_MESSAGE per identity and per address
// (contract 3), in the database, so neither many addresses nor many identities multiply messages.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_SENDS_A_MESSAGE: '3/900' } });
});
afterAll(async () => {
  await t.close();
});

function startFrom(token: string, address: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups',
    headers: bearer(token),
    remoteAddress: address,
    payload: { channel: 'identifier' },
  });
}

describe('POST /step-ups that sends a message', () => {
  it('counts per identity: from a new address each time, the fourth in the window is 429 and sends nothing', async () => {
    const person = await createPerson(t.ctx);
    const { accessToken } = await signIn(t.app, person);
    for (let i = 1; i <= 3; i++)
      expect((await startFrom(accessToken, `198.51.100.${i}`)).statusCode).toBe(201);
    const sent = outbox(t.config.dataDir).filter((m) => m.to === person.email).length;
    const fourth = await startFrom(accessToken, '198.51.100.4');
    expect({ status: fourth.statusCode, code: fourth.json().code }).toEqual({
      status: 429,
      code: 'rate_limit.exceeded',
    });
    expect(Number(fourth.headers['retry-after'])).toBe(900);
    expect(outbox(t.config.dataDir).filter((m) => m.to === person.email)).toHaveLength(sent);
    // The window ends: messages flow again (from a session opened now: the old token has expired).
    t.clock.advance(900);
    const later = await signIn(t.app, person);
    expect((await startFrom(later.accessToken, '198.51.100.5')).statusCode).toBe(201);
  });

  it('counts per address: many identities behind one address share its window', async () => {
    const address = '203.0.113.77';
    const tokens = [];
    for (let i = 0; i < 4; i++) tokens.push((await signIn(t.app, await createPerson(t.ctx))).accessToken);
    for (const token of tokens.slice(0, 3)) expect((await startFrom(token, address)).statusCode).toBe(201);
    expect((await startFrom(tokens[3], address)).statusCode).toBe(429);
    expect((await startFrom(tokens[3], '203.0.113.78')).statusCode).toBe(201);
  });
});
