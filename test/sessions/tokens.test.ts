import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Grant, signIn } from '../helpers/identities.js';
import {
  context,
  decodeJwt,
  expectProblem,
  renew,
  sessionRow,
  sessionsOf,
  signInRaw,
  signOut,
} from './support.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('access token claims and the JWKS', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('carries iss, aud, sub, sid, iat, exp (900 s later) and jti, signed EdDSA as at+jwt', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const { header, payload } = decodeJwt(grant.accessToken);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'at+jwt' });
    expect(typeof header.kid).toBe('string');

    const nowSeconds = Math.floor(t.clock.now().getTime() / 1000);
    expect(payload.iss).toBe(t.config.publicOrigin);
    expect(payload.aud).toBe(t.config.publicOrigin);
    expect(payload.sub).toBe(person.identityId);
    expect(payload.sid).toMatch(UUID);
    expect(payload.iat).toBe(nowSeconds);
    expect(payload.exp).toBe(nowSeconds + 900);
    expect((payload.exp as number) - (payload.iat as number)).toBe(900);
    expect(payload.jti).toEqual(expect.any(String));
    expect(String(payload.jti).length).toBeGreaterThan(0);
    expect(grant.accessTokenExpiresAt).toBe(new Date((nowSeconds + 900) * 1000).toISOString());

    // sid names this identity's session, which lasts 30 days from sign-in.
    const row = await sessionRow(t.db.database.db, payload.sid as string);
    expect(row.identity_id).toBe(person.identityId);
    expect(new Date(row.expires_at).toISOString()).toBe(grant.sessionExpiresAt);
    expect(Date.parse(grant.sessionExpiresAt) - t.clock.now().getTime()).toBe(30 * 24 * 3600 * 1000);

    // Every token gets its own jti, the renewed one included.
    const second = (await renew(t.app, grant.refreshToken)).json().data as Grant;
    const again = decodeJwt(second.accessToken).payload;
    expect(again.jti).not.toBe(payload.jti);
    expect(again.sid).toBe(payload.sid);
  });

  it('verifies with the served JWKS, which holds no private member', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect(res.statusCode).toBe(200);
    const jwks = res.json() as JSONWebKeySet;
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    // The access-token key and the OpenID Provider's RS256 and EdDSA keys (docs/oidc.md, "Keys").
    for (const key of jwks.keys) {
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key).not.toHaveProperty(secret);
      expect(key.kty === 'OKP' ? key.crv : key.kty).toBe(key.alg === 'RS256' ? 'RSA' : 'Ed25519');
    }
    expect(new Set(jwks.keys.map((k) => k.kid)).size).toBe(jwks.keys.length);
    expect(res.body).not.toContain('"d"');

    const { payload, protectedHeader } = await jwtVerify(grant.accessToken, createLocalJWKSet(jwks), {
      issuer: t.config.publicOrigin,
      audience: t.config.publicOrigin,
      typ: 'at+jwt',
      algorithms: ['EdDSA'],
      currentDate: t.clock.now(),
    });
    expect(payload.sub).toBe(person.identityId);
    expect(protectedHeader.alg).toBe('EdDSA');

    // A token whose payload was edited no longer verifies against the JWKS.
    const [h, , s] = grant.accessToken.split('.');
    const edited = Buffer.from(
      JSON.stringify({ ...payload, sub: '00000000-0000-4000-8000-000000000000' }),
    ).toString('base64url');
    await expect(
      jwtVerify(`${h}.${edited}.${s}`, createLocalJWKSet(jwks), { currentDate: t.clock.now() }),
    ).rejects.toThrow();
  });
});

describe('rate limit of the password-proving routes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_PROVES_A_PASSWORD: '3/60' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses the 4th sign-in from one client with 429 and Retry-After; renewals count on their own', async () => {
    const person = await createPerson(t.ctx);
    const client = '10.9.8.7';
    const first = await signInRaw(t.app, person.email, person.password, client);
    expect(first.statusCode).toBe(201);
    expect((await signInRaw(t.app, person.email, 'a wrong password', client)).statusCode).toBe(401);
    const third = await signInRaw(t.app, person.email, person.password, client);
    expect(third.statusCode).toBe(201);

    const before = (await sessionsOf(t.db.database.db, person.identityId)).length;
    const limited = await signInRaw(t.app, person.email, person.password, client);
    expectProblem(limited, 429, 'rate_limit.exceeded');
    expect(limited.json().retryable).toBe(true);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Even the right password is refused, and no session was opened by it.
    expect(limited.body).not.toContain('accessToken');
    expect(await sessionsOf(t.db.database.db, person.identityId)).toHaveLength(before);

    // Another client is not affected.
    expect((await signInRaw(t.app, person.email, person.password, '10.9.8.6')).statusCode).toBe(201);

    // Three renewals from the same client are still allowed; the fourth is limited.
    let current = first.json().data as Grant;
    for (let i = 0; i < 3; i++) {
      const res = await renew(t.app, current.refreshToken, client);
      expect(res.statusCode, res.body).toBe(201);
      current = res.json().data as Grant;
    }
    const fourth = await renew(t.app, current.refreshToken, client);
    expectProblem(fourth, 429, 'rate_limit.exceeded');
    expect(fourth.headers['retry-after']).toMatch(/^\d+$/);
    // The limited renewal never reached the rotation: the token still renews for another client.
    expect((await renew(t.app, current.refreshToken, '10.9.8.5')).statusCode).toBe(201);
  });
});

describe('secrets never reach the logs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'trace' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a full flow (sign-in, refused sign-in, renewal, replay, context, sign-out) logs no password or token', async () => {
    const person = await createPerson(t.ctx);
    const wrong = 'a wrong password that is secret';
    expect((await signInRaw(t.app, person.email, wrong)).statusCode).toBe(401);
    const grant = await signIn(t.app, person);
    const renewed = await renew(t.app, grant.refreshToken);
    expect(renewed.statusCode).toBe(201);
    const next = renewed.json().data as Grant;
    expect((await context(t.app, next.accessToken)).statusCode).toBe(200);
    expect((await signOut(t.app, next.accessToken)).statusCode).toBe(204);
    // Replays of both refresh tokens are refused and must not be logged either.
    expect((await renew(t.app, grant.refreshToken)).statusCode).toBe(401);
    expect((await renew(t.app, next.refreshToken)).statusCode).toBe(401);
    expect((await context(t.app, grant.accessToken)).statusCode).toBe(401);

    const logs = t.logs();
    // The flow was logged at all (so an absence below means something).
    expect(logs).toContain('/api/v1/sign-ins/renewals');
    for (const secret of [
      person.password,
      wrong,
      grant.refreshToken,
      next.refreshToken,
      grant.accessToken,
      next.accessToken,
      // The signature part alone is enough to replay a token.
      grant.accessToken.split('.')[2],
      next.accessToken.split('.')[2],
    ]) {
      expect(logs.includes(secret), `a secret appears in the logs`).toBe(false);
    }
  });
});
