import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate, elevated } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';

/*
 * Issue 45, items 3 and 4: sign-up by code (POST /sign-ups without a password when
 * SIGN_IN_CODES_SIGN_UP=on; the code opens the first session at POST /sign-ups/confirmations), an
 * identity without a password that adds one later, the admin's view of it, amr by channel.
 * PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const email = (identifier: string) => ({ identifierType: 'email', identifier });
let n = 0;
const fresh = () => `code-signup-${Date.now().toString(36)}-${n++}@example.com`;

function signUp(t: TestApp, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: '/api/v1/sign-ups', payload: body });
}

function confirm(t: TestApp, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: '/api/v1/sign-ups/confirmations', payload: body });
}

/** Signs `address` up by code and confirms: the 201 of the confirmation. */
async function signUpByCode(t: TestApp, address: string): Promise<LightMyRequestResponse> {
  const before = messagesTo(t.config.dataDir, address).length;
  const res = await signUp(t, email(address));
  expect(res.statusCode, res.body).toBe(201);
  const code = await waitForCode(t.config.dataDir, address, before + 1);
  return confirm(t, { ...email(address), code });
}

/** The bytes of a sign-up answer apart from its expiry instant and the masked address. */
const shape = (res: LightMyRequestResponse) =>
  res.body.replace(/"challengeExpiresAt":"[^"]+"/, '').replace(/"identifier":"[^"]+"/, '');

describe('sign-up by code, SIGN_IN_CODES_SIGN_UP off (the default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_CODES: 'email' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses a sign-up without a password with 400 validation.failed, as the interface says, and sends nothing', async () => {
    const address = fresh();
    const res = await signUp(t, email(address));
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation.failed');
    expect(res.body).not.toContain(address);
    expect(messagesTo(t.config.dataDir, address)).toHaveLength(0);
  });

  it('refuses a confirmation without a password with 400 validation.failed', async () => {
    const res = await confirm(t, { ...email(fresh()), code: '123456' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation.failed');
  });
});

describe('sign-up by code, SIGN_IN_CODES_SIGN_UP on', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      admin: true,
      env: { SIGN_IN_CODES: 'email', SIGN_IN_CODES_SIGN_UP: 'on', SIGN_IN_CODES_WITH_PASSWORD: 'off' },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends a code; the code opens a session of a new identity with no password, amr otp+email', async () => {
    const address = fresh();
    const res = await signUp(t, email(address));
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data.identity).toEqual({ identifierType: 'email', identifier: expect.stringMatching(/\*\*\*@/) });
    expect(data.challengeDelivery).toEqual({ status: 'DELIVERED', resendable: false });
    const code = await waitForCode(t.config.dataDir, address, 1);
    expect(res.body).not.toContain(code);
    expect(messagesTo(t.config.dataDir, address)[0].subject).toBe('Your sign-up code');

    const confirmed = await confirm(t, { ...email(address), code });
    expect(confirmed.statusCode, confirmed.body).toBe(201);
    const grant = confirmed.json().data;
    expect(grant.kind).toBe('session');
    const { sub, sid } = decodeJwt(grant.accessToken) as { sub: string; sid: string };

    const identity = await t.ctx.database.db
      .selectFrom('identities')
      .select(['password_hash'])
      .where('id', '=', sub)
      .executeTakeFirstOrThrow();
    expect(identity.password_hash).toBeNull();
    const session = await t.ctx.database.db
      .selectFrom('sessions')
      .select(['method', 'channel'])
      .where('id', '=', sid)
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'code', channel: 'email' });

    // The history says method code; the events say the identity was created, by a sign-up by code.
    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history',
      headers: bearer(grant.accessToken),
    });
    expect(history.json().data.map((e: { method: string }) => e.method)).toEqual(['code']);
    const events = await t.ctx.database.db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('identity_id', '=', sub)
      .orderBy('seq')
      .execute();
    expect(events.map((e) => e.type)).toEqual(['identity.created', 'session.created']);
    expect(events[0].data).toMatchObject({ via: 'sign_up_code' });
    expect(events[1].data).toMatchObject({ method: 'code' });
    const audit = await t.ctx.database.db
      .selectFrom('audit_records')
      .select(['name'])
      .where('target', '=', sub)
      .orderBy('seq')
      .execute();
    expect(audit.map((a) => a.name)).toEqual(['identity.sign_up.requested', 'identity.identifier.verified']);

    // The code is single use.
    const again = await confirm(t, { ...email(address), code });
    expect(again.statusCode).toBe(422);
    expect(again.json().code).toBe('identity.verification_refused');
  });

  it("refuses a wrong code, an unknown address and a password registration's code with the identical 422", async () => {
    const address = fresh();
    const viaPassword = fresh();
    expect((await signUp(t, email(address))).statusCode).toBe(201);
    const code = await waitForCode(t.config.dataDir, address, 1);
    expect(
      (await signUp(t, { ...email(viaPassword), password: 'lantern-orchard-velvet-73' })).statusCode,
    ).toBe(201);
    const passwordCode = await waitForCode(t.config.dataDir, viaPassword, 1);
    const wrong = code === '000000' ? '111111' : '000000';
    const refusals = [
      await confirm(t, { ...email(address), code: wrong }),
      await confirm(t, { ...email(fresh()), code }),
      await confirm(t, { ...email(viaPassword), code: passwordCode }),
    ];
    for (const r of refusals) {
      expect(r.statusCode).toBe(422);
      expect(r.body).toBe(refusals[0].body);
    }
    // The password registration still confirms with its password.
    const withPassword = await confirm(t, {
      ...email(viaPassword),
      password: 'lantern-orchard-velvet-73',
      code: passwordCode,
    });
    expect(withPassword.statusCode, withPassword.body).toBe(204);
  });

  it('answers an address already verified by its owner exactly as a new one, and the owner gets a code that signs in', async () => {
    const owner = await createPerson(t.ctx);
    // Without a password, so SIGN_IN_CODES_WITH_PASSWORD=off still lets the owner sign in by code.
    await t.ctx.database.db
      .updateTable('identities')
      .set({ password_hash: null })
      .where('id', '=', owner.identityId)
      .execute();
    const known = await signUp(t, email(owner.email));
    const unknown = await signUp(t, email(fresh()));
    expect(known.statusCode, known.body).toBe(201);
    expect(shape(known)).toBe(shape(unknown));

    const code = await waitForCode(t.config.dataDir, owner.email, 1);
    expect(messagesTo(t.config.dataDir, owner.email)[0].subject).toBe('Your sign-in code');
    const signedIn = await confirm(t, { ...email(owner.email), code });
    expect(signedIn.statusCode, signedIn.body).toBe(201);
    expect(decodeJwt(signedIn.json().data.accessToken).sub).toBe(owner.identityId);
    // No second identity, no identity.created for the owner.
    const identifiers = await t.ctx.database.db
      .selectFrom('identifiers')
      .select('identity_id')
      .where('value', '=', owner.email)
      .execute();
    expect(identifiers).toEqual([{ identity_id: owner.identityId }]);
  });

  it('sends an owner who may not sign in by code (a password, WITH_PASSWORD off) a notice, and no code confirms', async () => {
    const owner = await createPerson(t.ctx);
    const known = await signUp(t, email(owner.email));
    const unknown = await signUp(t, email(fresh()));
    expect(known.statusCode).toBe(201);
    expect(shape(known)).toBe(shape(unknown));
    const [notice] = messagesTo(t.config.dataDir, owner.email);
    expect(notice.subject).toBe('You already have an account');
    expect(notice.text).not.toMatch(/\b[0-9]{6}\b/);
  });

  it('a passwordless identity adds a password later with a step-up, not without one, and only once', async () => {
    const address = fresh();
    const confirmed = await signUpByCode(t, address);
    const { accessToken } = confirmed.json().data;
    const add = (headers: Record<string, string>, newPassword = 'quartz-meadow-lantern-91') =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-in-methods/passwords',
        headers,
        payload: { newPassword },
      });

    const bare = await add(bearer(accessToken));
    expect(bare.statusCode).toBe(403);
    expect(bare.json().code).toBe('identity.elevation_required');

    // Password change has nothing to check against: the same 422 as a wrong password.
    const change = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      headers: bearer(accessToken),
      payload: { currentPassword: 'anything at all', newPassword: 'quartz-meadow-lantern-91' },
    });
    expect(change.statusCode).toBe(422);
    expect(change.json().code).toBe('identity.password_change_refused');

    // Password sign-in without a password: the ordinary refusal.
    const noPassword = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { ...email(address), password: 'quartz-meadow-lantern-91' },
    });
    expect(noPassword.statusCode).toBe(401);

    const elevation = await elevate(t, accessToken, address);
    const added = await add(elevated(accessToken, elevation));
    expect(added.statusCode, added.body).toBe(204);
    const second = await add(elevated(accessToken, elevation), 'another-harbour-compass-58');
    expect(second.statusCode).toBe(409);
    expect(second.json().code).toBe('identity.password_exists');

    const grant = await signIn(t.app, { email: address, password: 'quartz-meadow-lantern-91' });
    expect(grant.kind).toBe('session');
    const methods = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-in-methods',
      headers: bearer(grant.accessToken),
    });
    expect(
      methods
        .json()
        .data.map((m: { kind: string }) => m.kind)
        .sort(),
    ).toEqual(['email', 'password']);
    const events = await t.ctx.database.db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('identity_id', '=', decodeJwt(accessToken).sub as string)
      .where('type', '=', 'identity.password_changed')
      .execute();
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ via: 'added' });
  });

  it("the admin's detail shows no password and the code channels; with a password added, hasPassword", async () => {
    const address = fresh();
    const confirmed = await signUpByCode(t, address);
    const identityId = decodeJwt(confirmed.json().data.accessToken).sub as string;
    const detail = await adminRequest(t.admin!, 'GET', `/identities/${identityId}`);
    expect(detail.statusCode, detail.body).toBe(200);
    expect(detail.json().data).toMatchObject({ hasPassword: false, codeSignIn: { channels: ['email'] } });
    expect(detail.json().data.methods.map((m: { kind: string }) => m.kind)).toEqual(['email']);

    const owner = await createPerson(t.ctx);
    const withPassword = await adminRequest(t.admin!, 'GET', `/identities/${owner.identityId}`);
    // A password and SIGN_IN_CODES_WITH_PASSWORD=off: no code sign-in.
    expect(withPassword.json().data).toMatchObject({ hasPassword: true, codeSignIn: { channels: [] } });
  });

  it('a passwordless identity cannot remove its only address; the erasure and the export handle no password', async () => {
    const address = fresh();
    const confirmed = await signUpByCode(t, address);
    const { accessToken } = confirmed.json().data;
    const identityId = decodeJwt(accessToken).sub as string;
    const elevation = await elevate(t, accessToken, address);
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-in-methods',
      headers: bearer(accessToken),
    });
    const [only] = list.json().data;
    const removal = await t.app.inject({
      method: 'POST',
      url: `/api/v1/sign-in-methods/${only.id}/removals`,
      headers: elevated(accessToken, elevation),
    });
    expect(removal.statusCode).toBe(409);
    expect(removal.json().code).toBe('identity.last_sign_in_method');

    const erased = await adminRequest(t.admin!, 'POST', `/identities/${identityId}/erasures`);
    expect(erased.statusCode, erased.body).toBe(204);
  });

  it('password recovery of a passwordless identity sets its first password (the same mailbox proof)', async () => {
    const address = fresh();
    const confirmed = await signUpByCode(t, address);
    const identityId = decodeJwt(confirmed.json().data.accessToken).sub as string;
    const before = messagesTo(t.config.dataDir, address).length;
    const start = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries',
      payload: email(address),
    });
    expect(start.statusCode, start.body).toBe(201);
    const code = await waitForCode(t.config.dataDir, address, before + 1);
    const done = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries/confirmations',
      payload: { ...email(address), code, newPassword: 'harbour-quill-meadow-64' },
    });
    expect(done.statusCode, done.body).toBe(204);
    const grant = await signIn(t.app, { email: address, password: 'harbour-quill-meadow-64' });
    expect(decodeJwt(grant.accessToken).sub).toBe(identityId);
  });

  it('refuses a channel SIGN_IN_CODES does not name with 422 identity.identifier_channel_unavailable', async () => {
    const res = await signUp(t, { identifierType: 'phone', identifier: '06 12 34 56 78', country: 'FR' });
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('identity.identifier_channel_unavailable');
  });
});

describe('sign-up by code on SMS, and its destination window', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Three messages per destination window: the sign-in-code window is tried below.
    t = await createTestApp({
      env: { SIGN_IN_CODES: 'email,sms', SIGN_IN_CODES_SIGN_UP: 'on', RATE_LIMIT_SENDS_A_MESSAGE: '3/900' },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('a phone number signs up by code; the session records channel phone (amr otp+sms)', async () => {
    const phone = { identifierType: 'phone', identifier: '06 12 34 56 79', country: 'FR' };
    const res = await signUp(t, phone);
    expect(res.statusCode, res.body).toBe(201);
    const code = await waitForCode(t.config.dataDir, '+33612345679', 1);
    const confirmed = await confirm(t, { ...phone, code });
    expect(confirmed.statusCode, confirmed.body).toBe(201);
    const sid = decodeJwt(confirmed.json().data.accessToken).sid as string;
    const session = await t.ctx.database.db
      .selectFrom('sessions')
      .select(['method', 'channel'])
      .where('id', '=', sid)
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'code', channel: 'phone' });
  });

  it("an owner's address and a new one reach the 429 at the same count, and the owner's step-up codes are not held back", async () => {
    const owner = await createPerson(t.ctx);
    const address = fresh();
    const from = (i: number) => `192.0.2.${i}`;
    let i = 0;
    const attempt = (identifier: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ups',
        payload: email(identifier),
        remoteAddress: from(++i),
      });
    for (let n = 0; n < 3; n++) {
      expect((await attempt(owner.email)).statusCode).toBe(201);
      expect((await attempt(address)).statusCode).toBe(201);
    }
    const [known, unknown] = [await attempt(owner.email), await attempt(address)];
    expect(known.statusCode).toBe(429);
    expect(unknown.statusCode).toBe(429);
    expect(known.body).toBe(unknown.body);
    expect(known.headers['retry-after']).toBe(unknown.headers['retry-after']);
    // The window the owner's step-up codes share was not spent by a stranger's sign-ups.
    const grant = await signIn(t.app, owner);
    const stepUp = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups',
      headers: bearer(grant.accessToken),
      payload: { channel: 'identifier' },
    });
    expect(stepUp.statusCode, stepUp.body).toBe(201);
  });
});
