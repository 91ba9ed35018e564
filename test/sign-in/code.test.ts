import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Person } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  expectIdentical,
  personWithFactor,
  totp,
} from '../second-factors/helpers.js';

/*
 * Issue 45, item 1: sign-in by a code sent to a verified address (POST /sign-ins/codes, then
 * POST /sign-ins/codes/{id}). PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CODES = '/api/v1/sign-ins/codes';
const email = (identifier: string) => ({ identifierType: 'email', identifier });

function send(t: TestApp, identifier: string, remoteAddress = '192.0.2.10'): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: CODES, payload: email(identifier), remoteAddress });
}

function answer(t: TestApp, id: string, identifier: string, code: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: `${CODES}/${id}`, payload: { ...email(identifier), code } });
}

/** Sends a code to `p` and reads it from the outbox: its id and the code. */
async function codeFor(t: TestApp, p: Person): Promise<{ id: string; code: string }> {
  const before = messagesTo(t.config.dataDir, p.email).length;
  const res = await send(t, p.email);
  expect(res.statusCode, res.body).toBe(201);
  const code = await waitForCode(t.config.dataDir, p.email, before + 1);
  return { id: res.json().data.signInCodeId, code };
}

/** Lets the deliveries started just after the answers leave, so an absent message is really absent. */
const settle = () => new Promise((r) => setTimeout(r, 50));

async function disable(t: TestApp, identityId: string): Promise<void> {
  await t.ctx.database.db
    .updateTable('identities')
    .set({ disabled_at: t.clock.now() })
    .where('id', '=', identityId)
    .execute();
}

async function unverifiedPerson(t: TestApp): Promise<Person> {
  const p = await createPerson(t.ctx);
  await t.ctx.database.db
    .updateTable('identifiers')
    .set({ verified_at: null })
    .where('identity_id', '=', p.identityId)
    .execute();
  return p;
}

describe('sign-in by code', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_CODES: 'email' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends a code to a verified address and opens a session with it, recorded as method code', async () => {
    const p = await createPerson(t.ctx);
    const res = await send(t, p.email);
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(Object.keys(data).sort()).toEqual(['codeExpiresAt', 'signInCodeId']);
    expect(res.body).not.toMatch(/code"\s*:\s*"[0-9]{6}"/);
    const code = await waitForCode(t.config.dataDir, p.email, 1);
    const message = messagesTo(t.config.dataDir, p.email)[0];
    expect(message.subject).toBe('Your sign-in code');

    const signedIn = await answer(t, data.signInCodeId, p.email, code);
    expect(signedIn.statusCode, signedIn.body).toBe(201);
    const grant = signedIn.json().data;
    expect(grant.kind).toBe('session');

    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history',
      headers: bearer(grant.accessToken),
    });
    expect(history.statusCode).toBe(200);
    const entries = history.json().data as { method: string; outcome: string }[];
    expect(entries.filter((e) => e.outcome === 'succeeded').map((e) => e.method)).toEqual(['code']);

    const events = await t.ctx.database.db
      .selectFrom('events')
      .select(['type'])
      .where('identity_id', '=', p.identityId)
      .execute();
    expect(events.map((e) => e.type)).toContain('session.created');
    const audit = await t.ctx.database.db
      .selectFrom('audit_records')
      .select(['name', 'outcome'])
      .where('target', '=', p.identityId)
      .orderBy('seq')
      .execute();
    expect(audit).toContainEqual({ name: 'identity.sign_in_code.requested', outcome: 'success' });
  });

  it('answers a second-factor ticket when the identity holds a second factor, and the second step opens the session', async () => {
    const { person, factor } = await personWithFactor(t);
    const { id, code } = await codeFor(t, person);
    const res = await answer(t, id, person.email, code);
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data.kind).toBe('second_factor_required');
    expect(data).not.toHaveProperty('accessToken');
    const second = await completeSignIn(t.app, {
      secondFactorTicket: data.secondFactorTicket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json().data.kind).toBe('session');
  });

  it('is single use', async () => {
    const p = await createPerson(t.ctx);
    const { id, code } = await codeFor(t, p);
    expect((await answer(t, id, p.email, code)).statusCode).toBe(201);
    const again = await answer(t, id, p.email, code);
    const wrong = await answer(t, id, p.email, '000000');
    expectIdentical([again, wrong], 401, 'identity.sign_in_refused');
  });

  it('expires with the challenge lifetime', async () => {
    const p = await createPerson(t.ctx);
    const { id, code } = await codeFor(t, p);
    t.clock.advance(t.config.lifetimes.challenge + 1);
    const late = await answer(t, id, p.email, code);
    expect(late.statusCode, late.body).toBe(401);
    expect(late.json().code).toBe('identity.sign_in_refused');
  });

  it('a newer code ends the older one', async () => {
    const p = await createPerson(t.ctx);
    const older = await codeFor(t, p);
    const newer = await codeFor(t, p);
    expect(newer.id).not.toBe(older.id);
    const old = await answer(t, older.id, p.email, older.code);
    expect(old.statusCode, old.body).toBe(401);
    const signedIn = await answer(t, newer.id, p.email, newer.code);
    expect(signedIn.statusCode).toBe(201);
    // Only the success is in the identity's history (a refusal is not recorded: equal time).
    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history',
      headers: bearer(signedIn.json().data.accessToken),
    });
    const entries = history.json().data as { method: string; outcome: string }[];
    expect(entries.map((e) => `${e.method}:${e.outcome}`)).toEqual(['code:succeeded']);
  });

  it("refuses a code answered at another address's id, or at an id of nothing", async () => {
    const a = await createPerson(t.ctx);
    const b = await createPerson(t.ctx);
    const forA = await codeFor(t, a);
    const refusals = [
      await answer(t, forA.id, b.email, forA.code),
      await answer(t, randomUUID(), a.email, forA.code),
      await answer(t, forA.id, `nobody-${randomUUID()}@example.com`, forA.code),
    ];
    expectIdentical(refusals, 401, 'identity.sign_in_refused');
    // Nothing above spent it: the owner's code still signs in.
    expect((await answer(t, forA.id, a.email, forA.code)).statusCode).toBe(201);
  });

  it('five wrong codes exhaust the code: the correct one is then refused', async () => {
    const p = await createPerson(t.ctx);
    const { id, code } = await codeFor(t, p);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) expect((await answer(t, id, p.email, wrong)).statusCode).toBe(401);
    expect((await answer(t, id, p.email, code)).statusCode).toBe(401);
  });

  it('answers unknown, unverified and disabled addresses exactly as a known one, and sends them nothing', async () => {
    const known = await createPerson(t.ctx);
    const unverified = await unverifiedPerson(t);
    const disabled = await createPerson(t.ctx);
    await disable(t, disabled.identityId);
    const unknown = `nobody-${randomUUID()}@example.com`;
    const addresses = [known.email, unknown, unverified.email, disabled.email];
    const answers = [];
    for (const address of addresses) answers.push(await send(t, address));
    for (const r of answers) {
      expect(r.statusCode, r.body).toBe(201);
      expect(r.headers['content-type']).toBe(answers[0].headers['content-type']);
    }
    // Byte-identical but for the fresh id each send answers.
    const ids = answers.map((r) => r.json().data.signInCodeId as string);
    expect(new Set(ids).size).toBe(ids.length);
    const bodies = answers.map((r, i) => r.body.replace(ids[i], '<id>'));
    expect(new Set(bodies).size).toBe(1);
    await waitForCode(t.config.dataDir, known.email, 1);
    await settle();
    for (const address of addresses.slice(1)) expect(messagesTo(t.config.dataDir, address)).toEqual([]);

    // Their answers are the identical refusal too.
    const refusals = [];
    for (const [i, address] of addresses.entries()) refusals.push(await answer(t, ids[i], address, '123456'));
    expectIdentical(refusals, 401, 'identity.sign_in_refused');
  });

  it('refuses an identity disabled after its code was sent', async () => {
    const p = await createPerson(t.ctx);
    const { id, code } = await codeFor(t, p);
    await disable(t, p.identityId);
    const res = await answer(t, id, p.email, code);
    expect(res.statusCode, res.body).toBe(401);
    expect(res.json().code).toBe('identity.sign_in_refused');
  });

  it('refuses a channel SIGN_IN_CODES does not name, by configuration, and strict bodies', async () => {
    const phone = await t.app.inject({
      method: 'POST',
      url: CODES,
      payload: { identifierType: 'phone', identifier: '+14155550100', country: 'US' },
    });
    expect(phone.statusCode, phone.body).toBe(422);
    expect(phone.json().code).toBe('identity.identifier_channel_unavailable');
    const extra = await t.app.inject({
      method: 'POST',
      url: CODES,
      payload: { ...email('a@example.com'), password: 'x' },
    });
    expect(extra.statusCode).toBe(400);
    const badId = await answer(t, 'not-a-uuid', 'a@example.com', '123456');
    expect(badId.statusCode).toBe(400);
  });
});

describe('sign-in by code: settings and limits', () => {
  it('is off by default: every channel is refused by configuration', async () => {
    const t = await createTestApp();
    try {
      const p = await createPerson(t.ctx);
      const res = await send(t, p.email);
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().code).toBe('identity.identifier_channel_unavailable');
      const none = await answer(t, randomUUID(), p.email, '123456');
      expect(none.statusCode).toBe(401);
    } finally {
      await t.close();
    }
  });

  it('SIGN_IN_CODES_WITH_PASSWORD=off: an identity with a password is answered as an unknown address', async () => {
    const t = await createTestApp({ env: { SIGN_IN_CODES: 'email', SIGN_IN_CODES_WITH_PASSWORD: 'off' } });
    try {
      const withPassword = await createPerson(t.ctx);
      const without = await createPerson(t.ctx);
      await t.ctx.database.db
        .updateTable('identities')
        .set({ password_hash: null })
        .where('id', '=', without.identityId)
        .execute();
      const refused = await send(t, withPassword.email);
      expect(refused.statusCode).toBe(201);
      const { id, code } = await codeFor(t, without);
      expect((await answer(t, id, without.email, code)).statusCode).toBe(201);
      await settle();
      expect(messagesTo(t.config.dataDir, withPassword.email)).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it("charges the address's guess budget, known or not: past the free failures even the right code is 429", async () => {
    const t = await createTestApp({ env: { SIGN_IN_CODES: 'email', RATE_LIMIT_GUESSES: '10/600' } });
    try {
      const p = await createPerson(t.ctx);
      const unknown = `nobody-${randomUUID()}@example.com`;
      const { id, code } = await codeFor(t, p);
      const wrong = code === '000000' ? '111111' : '000000';
      // Wrong codes at ids of nothing: they charge the address's budget, not the live code.
      const statuses = async (address: string, codeId: () => string) => {
        const seen: number[] = [];
        for (let i = 0; i < 11; i++) seen.push((await answer(t, codeId(), address, wrong)).statusCode);
        return seen;
      };
      const expected = [...Array(10).fill(401), 429];
      expect(await statuses(p.email, () => randomUUID())).toEqual(expected);
      expect(await statuses(unknown, () => randomUUID())).toEqual(expected);
      const blocked = await answer(t, id, p.email, code);
      expect(blocked.statusCode).toBe(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      // Once the wait is over the right code, still live, signs in.
      t.clock.advance(Number(blocked.headers['retry-after']));
      expect((await answer(t, id, p.email, code)).statusCode).toBe(201);
    } finally {
      await t.close();
    }
  });

  it('counts every send against the destination, known or not: past the limit 429 and nothing is sent', async () => {
    const t = await createTestApp({ env: { SIGN_IN_CODES: 'email', RATE_LIMIT_SENDS_A_MESSAGE: '3/900' } });
    try {
      const p = await createPerson(t.ctx);
      const unknown = `nobody-${randomUUID()}@example.com`;
      for (const address of [p.email, unknown]) {
        const seen: number[] = [];
        // Each from a client address of its own: only the destination's window can answer 429.
        for (let i = 0; i < 4; i++)
          seen.push((await send(t, address, `10.${i}.${address.length}.9`)).statusCode);
        expect(seen).toEqual([201, 201, 201, 429]);
      }
      await waitForCode(t.config.dataDir, p.email, 3);
      await settle();
      expect(messagesTo(t.config.dataDir, p.email)).toHaveLength(3);
      expect(messagesTo(t.config.dataDir, unknown)).toEqual([]);
      // The window ends: a code is sent again.
      t.clock.advance(900);
      expect((await send(t, p.email, '10.9.9.9')).statusCode).toBe(201);
    } finally {
      await t.close();
    }
  });
});
