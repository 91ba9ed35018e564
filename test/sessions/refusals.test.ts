import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { generateKeyPair, SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { opaqueToken } from '../../src/platform/crypto/tokens.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Grant, signIn } from '../helpers/identities.js';
import {
  CONTEXT,
  context,
  createPasswordless,
  createUnverified,
  decodeJwt,
  expectIdenticalRefusals,
  expectProblem,
  RENEWALS,
  renew,
  SIGN_INS,
  sessionRow,
  sidOf,
  signInRaw,
  signOut,
  signOutEverywhere,
} from './support.js';

describe('identical refusal families', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await createTestApp();
  });
  afterEach(async () => {
    await t?.close();
  });

  it('sign_in_refused: wrong password, unknown account, unverified identifier, unusable identifier, no password', async () => {
    const person = await createPerson(t.ctx);
    const unverifiedPassword = 'a perfectly good password 1';
    const unverified = await createUnverified(
      t.db.database.db,
      t.clock.now(),
      await t.ctx.passwords.hash(unverifiedPassword),
    );
    const passwordless = await createPasswordless(t.db.database.db, t.clock.now());

    const causes: Record<string, LightMyRequestResponse> = {
      'wrong password': await signInRaw(t.app, person.email, `${person.password}x`),
      'unknown account': await signInRaw(
        t.app,
        `nobody-${randomUUID().slice(0, 8)}@example.com`,
        person.password,
      ),
      'unverified identifier': await signInRaw(t.app, unverified.email, unverifiedPassword),
      'unusable identifier': await signInRaw(t.app, 'not-an-email', person.password),
      'identity with no password': await signInRaw(t.app, passwordless.email, person.password),
    };
    expectIdenticalRefusals(causes, 401, 'identity.sign_in_refused');
    for (const res of Object.values(causes)) {
      expect(res.body).not.toContain(person.password);
      expect(res.body).not.toContain(unverifiedPassword);
    }
    // The control: the right password on the verified identifier opens a session.
    expect((await signInRaw(t.app, person.email, person.password)).statusCode).toBe(201);
  });

  it('strict bodies: an undeclared property or a wrong type is 400 validation.failed, never dropped or coerced', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const form = { identifierType: 'email', identifier: person.email };
    const cases = [
      { url: SIGN_INS, payload: { ...form, password: person.password, extra: 1 } },
      { url: SIGN_INS, payload: { ...form, password: 12345 } },
      { url: SIGN_INS, payload: { ...form, password: person.password, country: 'FR' } },
      { url: RENEWALS, payload: { refreshToken: grant.refreshToken, more: true } },
      { url: RENEWALS, payload: {} },
    ];
    for (const c of cases) {
      const res = await t.app.inject({ method: 'POST', url: c.url, payload: c.payload });
      expectProblem(res, 400, 'validation.failed');
      expect(res.body).not.toContain(person.password);
      expect(res.body).not.toContain(grant.refreshToken);
    }
    // The refused renewal rotated nothing: the refresh token still renews once.
    expect((await renew(t.app, grant.refreshToken)).statusCode).toBe(201);
  });

  it('renewal_refused: unknown, spent, old-generation, revoked-session and expired-session tokens', async () => {
    const person = await createPerson(t.ctx);

    // Spent: the immediately previous generation, presented after its rotation.
    const spentGrant = await signIn(t.app, person);
    expect((await renew(t.app, spentGrant.refreshToken)).statusCode).toBe(201);

    // Old generation: two rotations later, the first token is presented.
    const oldGrant = await signIn(t.app, person);
    const second = (await renew(t.app, oldGrant.refreshToken)).json().data as Grant;
    expect((await renew(t.app, second.refreshToken)).statusCode).toBe(201);

    // Revoked session: signed out, then its current refresh token is presented.
    const revokedGrant = await signIn(t.app, person);
    expect((await signOut(t.app, revokedGrant.accessToken)).statusCode).toBe(204);

    // A session that stays untouched by the refusals above, then expires with time.
    const expiringGrant = await signIn(t.app, person);

    const causes: Record<string, LightMyRequestResponse> = {
      'unknown token': await renew(t.app, opaqueToken()),
      'spent token': await renew(t.app, spentGrant.refreshToken),
      'old-generation token': await renew(t.app, oldGrant.refreshToken),
      'token of a revoked session': await renew(t.app, revokedGrant.refreshToken),
    };
    // An invented token leaves other sessions usable.
    expect((await context(t.app, expiringGrant.accessToken)).statusCode).toBe(200);
    t.clock.advance(30 * 24 * 3600 + 1);
    causes['expired session'] = await renew(t.app, expiringGrant.refreshToken);
    expectIdenticalRefusals(causes, 401, 'identity.renewal_refused');

    const db = t.db.database.db;
    expect((await sessionRow(db, sidOf(spentGrant.accessToken))).revoked_reason).toBe(
      'refresh_token_replayed',
    );
    expect((await sessionRow(db, sidOf(oldGrant.accessToken))).revoked_reason).toBe('refresh_token_replayed');
    expect((await sessionRow(db, sidOf(revokedGrant.accessToken))).revoked_reason).toBe('signed_out');
  });

  it('session_required: missing, other scheme, empty, garbage, forged, alg none, expired, signed out, signed out everywhere, opaque', async () => {
    const person = await createPerson(t.ctx);
    const other = await createPerson(t.ctx);
    const live = await signIn(t.app, person);
    const get = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: CONTEXT, headers });

    // The control: the genuine token is accepted.
    expect((await context(t.app, live.accessToken)).statusCode).toBe(200);

    // Same header and claims, signed by an Ed25519 key the service never issued.
    const { header, payload } = decodeJwt(live.accessToken);
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await new SignJWT(payload)
      .setProtectedHeader(header as { alg: string; kid?: string; typ?: string })
      .sign(privateKey);
    const unsigned = [
      Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid: header.kid })).toString('base64url'),
      Buffer.from(JSON.stringify(payload)).toString('base64url'),
      '',
    ].join('.');
    // Correctly signed, for a session that was never opened.
    const unissued = (await t.ctx.tokens.sign(person.identityId, randomUUID())).token;

    const signedOut = await signIn(t.app, person);
    expect((await signOut(t.app, signedOut.accessToken)).statusCode).toBe(204);
    const everywhere = await signIn(t.app, other);
    expect((await signOutEverywhere(t.app, everywhere.accessToken)).statusCode).toBe(204);

    const causes: Record<string, LightMyRequestResponse> = {
      'missing header': await get({}),
      'Basic scheme': await get({ authorization: 'Basic xyz' }),
      'empty bearer': await get({ authorization: 'Bearer ' }),
      'garbage bearer': await get({ authorization: 'Bearer garbage' }),
      'JWT signed by another key': await get(bearer(forged)),
      'alg none': await get(bearer(unsigned)),
      'unissued session': await get(bearer(unissued)),
      'signed-out session': await get(bearer(signedOut.accessToken)),
      'after sign-out everywhere': await get(bearer(everywhere.accessToken)),
      'opaque non-JWT (elevation-like)': await get(bearer(opaqueToken())),
    };
    // Still accepted right before it expires; refused once the 900 seconds are over.
    t.clock.advance(899);
    expect((await context(t.app, live.accessToken)).statusCode).toBe(200);
    t.clock.advance(2);
    causes['expired access token'] = await get(bearer(live.accessToken));

    expectIdenticalRefusals(causes, 401, 'identity.session_required');
    expect(causes['missing header'].headers['www-authenticate']).toBe('Bearer');
  });
});
