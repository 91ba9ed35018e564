import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecret } from '../../src/features/events/webhooks/signing.js';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { hookEnv, type Receiver, startReceiver } from '../helpers/hooks.js';
import { createPerson } from '../helpers/identities.js';
import { TestIdp } from './idp.js';
import { exchange, good, handoffOf, ORIGIN, postAcs, type SsoSetup, setUp, startFlow } from './support.js';

// Issue 47, item 5 with docs/events.md ("Synchronous hooks"): an identity made by a first SSO
// sign-in (JIT) is asked of before_identity_created like a sign-up's or a provider's, through a
// real HTTP receiver verifying each call's signature. A refusal and an unavailable hook each
// answer one fixed return address, byte for byte, and make nothing.

const secret = newSecret();
let receiver: Receiver;
let t: TestApp;
let idp: TestIdp;
let s: SsoSetup;

const HOOK_REFUSED = `${ORIGIN}/account/#/sign-in?error=hook_refused`;
const UNAVAILABLE = `${ORIGIN}/account/#/sign-in?error=unavailable`;

beforeAll(async () => {
  receiver = await startReceiver(secret);
  t = await createTestApp({
    // The receiver checks the signature's timestamp against the wall clock (Standard Webhooks).
    clock: new ManualClock(new Date()),
    admin: true,
    env: { PUBLIC_ORIGIN: ORIGIN, ...hookEnv(secret, receiver.url, {}, '5000') },
  });
  idp = await TestIdp.create(t.clock.now());
  s = await setUp(t, idp);
}, 180_000);
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const address = () => `jit-${randomUUID().slice(0, 8)}@${s.domain}`;
const creations = () => receiver.calls.filter((c) => c.type === 'before_identity_created');
const holder = (email: string) =>
  t.ctx.database.db
    .selectFrom('identifiers')
    .select('identity_id')
    .where('value', '=', email)
    .executeTakeFirst();

async function acs(email: string) {
  const flow = await startFlow(t, s.connectionId);
  const res = await postAcs(t, s.connectionId, idp.response(good(s, flow, t, email)), flow.cookie);
  return { res, flow };
}

describe('JIT through SSO asks before_identity_created', () => {
  it('allowed: the identity is made, after one signed call naming the connection and the address', async () => {
    receiver.reply = () => ({ json: { allow: true } });
    const before = creations().length;
    const email = address();
    const { res, flow } = await acs(email);
    const code = handoffOf(res);
    expect(code, String(res.headers.location)).toBeTruthy();
    expect((await exchange(t, code as string, flow.cookie)).statusCode).toBe(201);
    expect(creations().length).toBe(before + 1);
    expect(creations().at(-1)?.data).toEqual({
      via: 'sso',
      connectionId: s.connectionId,
      organizationId: s.orgId,
      identifier: { type: 'email', value: email },
    });
    expect(await holder(email)).toBeDefined();
  });

  it('refused: the fixed return address, the same for two people, and no identity, handoff or member', async () => {
    receiver.reply = (call) =>
      call.type === 'before_identity_created'
        ? { json: { allow: false, message: 'Not here' } }
        : { json: { allow: true } };
    const answers = [];
    for (const email of [address(), address()]) {
      const { res } = await acs(email);
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(HOOK_REFUSED);
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(await holder(email)).toBeUndefined();
      answers.push({ location: res.headers.location, body: res.body });
    }
    expect(answers[0]).toEqual(answers[1]);
    // The hook's message is never put in a URL.
    expect(String(answers[0]?.location)).not.toContain('Not');
  });

  it('unavailable (a 500, or no answer within the timeout): the fixed address, nothing made', async () => {
    for (const reply of [() => ({ json: {}, status: 500 }), () => 'hang' as const]) {
      receiver.reply = (call) =>
        call.type === 'before_identity_created' ? reply() : { json: { allow: true } };
      const email = address();
      const { res } = await acs(email);
      expect(res.headers.location).toBe(UNAVAILABLE);
      expect(await holder(email)).toBeUndefined();
    }
  });

  it('a refused person may come back once allowed: the assertion refused by the hook was not spent as made', async () => {
    receiver.reply = (call) =>
      call.type === 'before_identity_created' ? { json: { allow: false } } : { json: { allow: true } };
    const email = address();
    expect((await acs(email)).res.headers.location).toBe(HOOK_REFUSED);
    receiver.reply = () => ({ json: { allow: true } });
    const { res, flow } = await acs(email);
    const code = handoffOf(res);
    expect(code, String(res.headers.location)).toBeTruthy();
    expect((await exchange(t, code as string, flow.cookie)).statusCode).toBe(201);
  });

  it('a verified holder of the address is linked without asking (no identity is made)', async () => {
    receiver.reply = (call) =>
      call.type === 'before_identity_created' ? { json: { allow: false } } : { json: { allow: true } };
    const email = address();
    const person = await createPerson(t.ctx, email);
    const before = creations().length;
    const { res, flow } = await acs(email);
    const code = handoffOf(res);
    expect(code, String(res.headers.location)).toBeTruthy();
    expect((await exchange(t, code as string, flow.cookie)).statusCode).toBe(201);
    expect(creations().length).toBe(before);
    expect((await holder(email))?.identity_id).toBe(person.identityId);
  });
});
