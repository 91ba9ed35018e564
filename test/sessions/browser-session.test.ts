import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browserSessionCookieName,
  refreshTokenFromCookie,
} from '../../src/features/sessions/browser-session.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Grant, race, signIn } from '../helpers/identities.js';
import { context, expectProblem, renew, sessionRow, sidOf } from './support.js';

const ORIGIN = 'https://id.example';
const COOKIE = '__Host-identity-session';
const HANDOVER = '/api/v1/browser-session';
const RENEWALS = '/api/v1/browser-session/renewals';
const SIGN_OUTS = '/api/v1/browser-session/sign-outs';
const SAME_ORIGIN = { origin: ORIGIN, 'sec-fetch-site': 'same-origin' };

/** The one Set-Cookie header of a response, split into its value and its attributes. */
function setCookieOf(res: LightMyRequestResponse): { name: string; value: string; attrs: string[] } {
  const header = res.headers['set-cookie'];
  const all = Array.isArray(header) ? header : header === undefined ? [] : [header];
  expect(all).toHaveLength(1);
  const [pair, ...attrs] = all[0].split(';').map((s) => s.trim());
  const eq = pair.indexOf('=');
  return { name: pair.slice(0, eq), value: pair.slice(eq + 1), attrs };
}

function expectCleared(res: LightMyRequestResponse): void {
  const c = setCookieOf(res);
  expect(c.name).toBe(COOKIE);
  expect(c.value).toBe('');
  expect(c.attrs).toContain('Max-Age=0');
}

describe('the hosted pages’ cookie session (browser-session routes)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { PUBLIC_ORIGIN: ORIGIN, CORS_ORIGINS: 'https://app.example' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const handOver = (refreshToken: string, headers: Record<string, string> = SAME_ORIGIN) =>
    t.app.inject({ method: 'POST', url: HANDOVER, headers, payload: { refreshToken } });
  const renewByCookie = (cookie: string | undefined, headers: Record<string, string> = SAME_ORIGIN) =>
    t.app.inject({
      method: 'POST',
      url: RENEWALS,
      headers: { ...headers, ...(cookie === undefined ? {} : { cookie: `${COOKIE}=${cookie}` }) },
    });
  const signOutByCookie = (cookie: string | undefined, headers: Record<string, string> = SAME_ORIGIN) =>
    t.app.inject({
      method: 'POST',
      url: SIGN_OUTS,
      headers: { ...headers, ...(cookie === undefined ? {} : { cookie: `${COOKIE}=${cookie}` }) },
    });

  async function cookieSession(): Promise<{ grant: Grant; cookie: string; accessToken: string }> {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const res = await handOver(grant.refreshToken);
    expect(res.statusCode).toBe(201);
    return { grant, cookie: setCookieOf(res).value, accessToken: res.json().data.accessToken };
  }

  it('the handover sets the HttpOnly __Host- cookie and never answers the refresh token', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const res = await handOver(grant.refreshToken);
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(Object.keys(body.data).sort()).toEqual([
      'accessToken',
      'accessTokenExpiresAt',
      'kind',
      'sessionExpiresAt',
    ]);
    expect(res.body).not.toContain(grant.refreshToken);
    expect(body.data.sessionExpiresAt).toBe(grant.sessionExpiresAt);
    expect(res.headers['cache-control']).toBe('no-store');

    const cookie = setCookieOf(res);
    expect(cookie.name).toBe(COOKIE);
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie.value).not.toBe(grant.refreshToken);
    expect(res.body).not.toContain(cookie.value);
    expect(cookie.attrs).toEqual(
      expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure', 'Max-Age=2592000']),
    );
    expect(cookie.attrs.some((a) => /^Domain=/i.test(a))).toBe(false);

    // The token the page's script saw is spent: presenting it again is a replay.
    expectProblem(await renew(t.app, grant.refreshToken), 401, 'identity.renewal_refused');
    expect((await sessionRow(t.db.database.db, sidOf(grant.accessToken))).revoked_reason).toBe(
      'refresh_token_replayed',
    );
  });

  it('renewals rotate the cookie and answer an access token of the same session', async () => {
    const { grant, cookie, accessToken } = await cookieSession();
    const first = await renewByCookie(cookie);
    expect(first.statusCode).toBe(201);
    const next = setCookieOf(first);
    expect(next.value).not.toBe(cookie);
    expect(next.attrs).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Secure', 'Path=/']));
    expect(first.json().data).not.toHaveProperty('refreshToken');
    expect(sidOf(first.json().data.accessToken)).toBe(sidOf(accessToken));
    expect((await context(t.app, first.json().data.accessToken)).statusCode).toBe(200);

    const second = await renewByCookie(next.value);
    expect(second.statusCode).toBe(201);
    expect(setCookieOf(second).value).not.toBe(next.value);
    expect((await sessionRow(t.db.database.db, sidOf(grant.accessToken))).revoked_at).toBeNull();
  });

  it('a replayed old cookie ends the session and clears the cookie', async () => {
    const { grant, cookie } = await cookieSession();
    const rotated = setCookieOf(await renewByCookie(cookie)).value;
    const replay = await renewByCookie(cookie);
    expectProblem(replay, 401, 'identity.renewal_refused');
    expectCleared(replay);
    expect((await sessionRow(t.db.database.db, sidOf(grant.accessToken))).revoked_reason).toBe(
      'refresh_token_replayed',
    );
    // The current cookie stopped working with it.
    expectProblem(await renewByCookie(rotated), 401, 'identity.renewal_refused');
  });

  it('two renewals with one cookie at once: one rotates, the other is a replay that ends the session', async () => {
    const { grant, cookie } = await cookieSession();
    const answers = await race(2, () => renewByCookie(cookie));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([201, 401]);
    for (const refused of answers.filter((r) => r.statusCode === 401)) expectCleared(refused);
    // Why the client takes turns between tabs: the same cookie value twice is a replay.
    expect((await sessionRow(t.db.database.db, sidOf(grant.accessToken))).revoked_reason).toBe(
      'refresh_token_replayed',
    );
  });

  it('two handovers at once with one previous cookie: both sign-ins hold, the previous session ends once', async () => {
    const before = await cookieSession();
    const person = await createPerson(t.ctx);
    const grants = [await signIn(t.app, person), await signIn(t.app, person)];
    const answers = await race(2, (i) =>
      t.app.inject({
        method: 'POST',
        url: HANDOVER,
        headers: { ...SAME_ORIGIN, cookie: `${COOKIE}=${before.cookie}` },
        payload: { refreshToken: grants[i].refreshToken },
      }),
    );
    expect(answers.map((r) => r.statusCode)).toEqual([201, 201]);
    expect((await sessionRow(t.db.database.db, sidOf(before.grant.accessToken))).revoked_reason).toBe(
      'signed_out',
    );
    for (const g of grants)
      expect((await sessionRow(t.db.database.db, sidOf(g.accessToken))).revoked_at).toBeNull();
  });

  it('no cookie, or an unknown one: the renewal refusal and a clearing Set-Cookie', async () => {
    for (const cookie of [undefined, 'x'.repeat(43), 'not a token!']) {
      const res = await renewByCookie(cookie);
      expectProblem(res, 401, 'identity.renewal_refused');
      expectCleared(res);
    }
    // The refusal is the one of POST /sign-ins/renewals.
    const viaBody = await renew(t.app, 'x'.repeat(43));
    const viaCookie = await renewByCookie('x'.repeat(43));
    expect(viaCookie.body).toBe(viaBody.body);
  });

  it('a refused handover answers the renewal refusal and clears the cookie', async () => {
    const res = await handOver('y'.repeat(43));
    expectProblem(res, 401, 'identity.renewal_refused');
    expectCleared(res);
  });

  it('a missing or foreign Origin, or a cross-site fetch, is refused and changes nothing', async () => {
    const { grant, cookie } = await cookieSession();
    const person = await createPerson(t.ctx);
    const other = await signIn(t.app, person);
    const bad: Record<string, Record<string, string>> = {
      'no origin': {},
      'foreign origin': { origin: 'https://evil.example' },
      'a CORS origin': { origin: 'https://app.example' },
      'null origin': { origin: 'null' },
      'origin with a path-like suffix': { origin: `${ORIGIN}.evil.example` },
      'cross-site fetch with our origin': { origin: ORIGIN, 'sec-fetch-site': 'cross-site' },
      'same-site fetch': { origin: ORIGIN, 'sec-fetch-site': 'same-site' },
    };
    for (const [cause, headers] of Object.entries(bad)) {
      for (const res of [
        await renewByCookie(cookie, headers),
        await signOutByCookie(cookie, headers),
        await handOver(other.refreshToken, headers),
      ]) {
        expect({ cause, status: res.statusCode }).toEqual({ cause, status: 403 });
        expectProblem(res, 403, 'identity.cross_site_refused');
        expect(res.headers['set-cookie']).toBeUndefined();
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
        expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      }
    }
    // Nothing changed: the cookie's token was not spent, the session lives, the other token is unspent.
    expect((await sessionRow(t.db.database.db, sidOf(grant.accessToken))).revoked_at).toBeNull();
    expect((await renewByCookie(cookie)).statusCode).toBe(201);
    expect((await renew(t.app, other.refreshToken)).statusCode).toBe(201);
  });

  it('never lets another origin read an answer, even one listed in CORS_ORIGINS', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: RENEWALS,
      headers: { origin: 'https://app.example' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    const ok = await renewByCookie(undefined);
    expect(ok.headers['access-control-allow-origin']).toBeUndefined();
    expect(ok.headers['access-control-allow-credentials']).toBeUndefined();
    // Bearer routes keep their CORS answer, still without credentials.
    const bearerRoute = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: { origin: 'https://app.example' },
    });
    expect(bearerRoute.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(bearerRoute.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('sign-out ends the cookie’s session and clears the cookie; 204 without one too', async () => {
    const { grant, cookie, accessToken } = await cookieSession();
    const res = await signOutByCookie(cookie);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectCleared(res);
    expect((await sessionRow(t.db.database.db, sidOf(grant.accessToken))).revoked_reason).toBe('signed_out');
    expectProblem(await context(t.app, accessToken), 401, 'identity.session_required');
    expectProblem(await renewByCookie(cookie), 401, 'identity.renewal_refused');

    for (const none of [undefined, cookie, 'z'.repeat(43)]) {
      const again = await signOutByCookie(none);
      expect(again.statusCode).toBe(204);
      expectCleared(again);
    }
  });

  it('the handover ends the session the cookie named before: one hosted session per browser', async () => {
    const before = await cookieSession();
    const person = await createPerson(t.ctx);
    const next = await signIn(t.app, person);
    const res = await t.app.inject({
      method: 'POST',
      url: HANDOVER,
      headers: { ...SAME_ORIGIN, cookie: `other=1; ${COOKIE}=${before.cookie}` },
      payload: { refreshToken: next.refreshToken },
    });
    expect(res.statusCode).toBe(201);
    expect(sidOf(res.json().data.accessToken)).toBe(sidOf(next.accessToken));
    expect((await sessionRow(t.db.database.db, sidOf(before.grant.accessToken))).revoked_reason).toBe(
      'signed_out',
    );
    expect((await sessionRow(t.db.database.db, sidOf(next.accessToken))).revoked_at).toBeNull();
    expect((await renewByCookie(setCookieOf(res).value)).statusCode).toBe(201);
  });

  it('takes a strict body on the handover', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const res = await t.app.inject({
      method: 'POST',
      url: HANDOVER,
      headers: SAME_ORIGIN,
      payload: { refreshToken: grant.refreshToken, extra: 1 },
    });
    expectProblem(res, 400, 'validation.failed');
    expect((await renew(t.app, grant.refreshToken)).statusCode).toBe(201);
  });

  it('documents the routes in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [HANDOVER, RENEWALS, SIGN_OUTS]) {
      expect(doc.paths[path].post.tags).toEqual(['sessions']);
      expect(doc.paths[path].post.responses).toHaveProperty('403');
    }
    expect(doc.paths[HANDOVER].post.responses).toHaveProperty('201');
    expect(doc.components.schemas.BrowserSessionGrant.properties).not.toHaveProperty('refreshToken');
  });
});

describe('the cookie’s name and parsing', () => {
  it('is __Host- prefixed on https and loopback, unprefixed on other plain-HTTP origins', () => {
    expect(browserSessionCookieName('https://id.example')).toBe(COOKIE);
    expect(browserSessionCookieName('http://localhost:3000')).toBe(COOKIE);
    expect(browserSessionCookieName('http://127.0.0.1:3000')).toBe(COOKIE);
    expect(browserSessionCookieName('http://[::1]:3000')).toBe(COOKIE);
    expect(browserSessionCookieName('http://id.internal:3000')).toBe('identity-session');
  });

  it('reads the token from a Cookie header, ignoring other names and malformed values', () => {
    const token = 'a'.repeat(43);
    expect(refreshTokenFromCookie(undefined, ORIGIN)).toBeUndefined();
    expect(refreshTokenFromCookie('', ORIGIN)).toBeUndefined();
    expect(refreshTokenFromCookie(`${COOKIE}=${token}`, ORIGIN)).toBe(token);
    expect(refreshTokenFromCookie(`a=b; ${COOKIE}=${token}; c=d`, ORIGIN)).toBe(token);
    expect(refreshTokenFromCookie(`identity-session=${token}`, ORIGIN)).toBeUndefined();
    expect(refreshTokenFromCookie(`identity-session=${token}`, 'http://id.internal')).toBe(token);
    expect(refreshTokenFromCookie(`${COOKIE}=`, ORIGIN)).toBeUndefined();
    expect(refreshTokenFromCookie(`${COOKIE}=a b`, ORIGIN)).toBeUndefined();
    expect(refreshTokenFromCookie(`${COOKIE}="${token}"`, ORIGIN)).toBe(token);
    expect(refreshTokenFromCookie(`${COOKIE}=bad!; ${COOKIE}=${token}`, ORIGIN)).toBe(token);
  });
});
