import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from '../events/support.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  personWithFactor,
  ticketFor,
  totp,
} from '../second-factors/helpers.js';

/*
 * session.created (docs/events.md) is appended by sign-in/complete.ts with the session it tells of:
 * once per session opened, by every strategy; none for a ticket or a refusal.
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

async function created(identityId: string) {
  const res = await admin(t, 'GET', '/events?types=session.created');
  expect(res.statusCode, res.body).toBe(200);
  const all = res.json().data as Array<{
    type: string;
    actor: string | null;
    identityId: string | null;
    sessionId: string | null;
    data: Record<string, unknown>;
  }>;
  return all.filter((e) => e.identityId === identityId);
}

describe('sign-in: session.created', () => {
  it('a password sign-in emits one, a ticket none, the second step one; a refusal none', async () => {
    const { person, factor } = await personWithFactor(t);
    // personWithFactor signed in once before the factor existed: that session was announced.
    const first = await created(person.identityId);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      type: 'session.created',
      actor: person.identityId,
      data: { identityId: person.identityId, method: 'password' },
    });
    expect(first[0].data.id).toBe(first[0].sessionId);

    const ticket = await ticketFor(t.app, person);
    expect(await created(person.identityId)).toHaveLength(1);

    const wrong = await completeSignIn(t.app, { secondFactorTicket: ticket, code: '000000' });
    expect(wrong.statusCode).not.toBe(201);
    expect(await created(person.identityId)).toHaveLength(1);

    const res = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(res.statusCode, res.body).toBe(201);
    const after = await created(person.identityId);
    expect(after).toHaveLength(2);
    expect(after.find((e) => e.data.method === 'second_factor')).toBeDefined();
    // No token of any kind in the event.
    expect(JSON.stringify(after)).not.toContain(res.json().data.refreshToken);
    expect(JSON.stringify(after)).not.toContain(ticket);
  });

  it('a refused password emits nothing', async () => {
    const { person } = await personWithFactor(t);
    const before = (await created(person.identityId)).length;
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: person.email, password: 'not the password at all' },
    });
    expect(refused.statusCode).toBe(401);
    expect(await created(person.identityId)).toHaveLength(before);
  });
});
