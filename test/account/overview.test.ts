import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';

const OVERVIEW = '/api/v1/account';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /account', () => {
  it('shows the owner their own identifiers unmasked and how the account is protected, without secrets', async () => {
    const who = await elevatedPerson(t);
    const before = await t.app.inject({
      method: 'GET',
      url: OVERVIEW,
      headers: bearer(who.grant.accessToken),
    });
    expect(before.statusCode, before.body).toBe(200);
    expect(before.headers['cache-control']).toBe('no-store');
    const doc = before.json().data;
    expect(doc).toEqual({
      id: who.person.identityId,
      createdAt: expect.any(String),
      locale: 'en',
      givenName: null,
      familyName: null,
      displayName: null,
      name: null,
      picture: null,
      identifiers: [
        { id: expect.any(String), type: 'email', value: who.person.email, verifiedAt: expect.any(String) },
      ],
      password: { set: true, changedAt: expect.any(String) },
      secondFactors: { active: 0 },
      passkeys: { count: 0, lastAddedAt: null },
      recoveryCodes: { remaining: 0, issuedAt: null },
      providerLinks: [],
    });
    // The session context keeps answering the masked form.
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(who.grant.accessToken),
    });
    expect(context.statusCode).toBe(200);
    expect(context.body).not.toContain(who.person.email);

    const codes = await t.app.inject({ method: 'POST', url: '/api/v1/recovery-codes', headers: who.headers });
    expect(codes.statusCode).toBe(201);
    const after = await t.app.inject({
      method: 'GET',
      url: OVERVIEW,
      headers: bearer(who.grant.accessToken),
    });
    expect(after.json().data.recoveryCodes).toEqual({ remaining: 10, issuedAt: expect.any(String) });
    for (const code of codes.json().data.recoveryCodes as string[]) expect(after.body).not.toContain(code);
    expect(after.body).not.toMatch(/\$argon2/);
  });

  it('answers each person only their own account', async () => {
    const ada = await createPerson(t.ctx);
    const grace = await createPerson(t.ctx);
    const res = await t.app.inject({
      method: 'GET',
      url: OVERVIEW,
      headers: bearer((await signIn(t.app, grace)).accessToken),
    });
    expect(res.json().data.id).toBe(grace.identityId);
    expect(res.body).toContain(grace.email);
    expect(res.body).not.toContain(ada.email);
  });

  it('needs a session', async () => {
    const none = await t.app.inject({ method: 'GET', url: OVERVIEW });
    expect(none.statusCode).toBe(401);
    expect(none.json().code).toBe('identity.session_required');
    const forged = await t.app.inject({ method: 'GET', url: OVERVIEW, headers: bearer('not-a-token') });
    expect(forged.statusCode).toBe(401);
  });
});
