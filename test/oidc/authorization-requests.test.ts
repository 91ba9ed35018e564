import { sql } from 'kysely';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browse,
  CookieJar,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';

/*
 * What one browser-facing request to the provider may cost, and the two methods it may use
 * (docs/oidc.md, "Endpoints" and "Limits"): /oidc/auth and /oidc/session/end are limited per
 * client address (RATE_LIMIT_OIDC_AUTHORIZATIONS), the authorization parameters the provider
 * stores are capped, and a form POST to either endpoint is the same request as its GET.
 */

const server = !!process.env.TEST_DATABASE_URL;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Rows the provider stored of one kind (an interaction per accepted authorization request). */
async function stored(f: OidcFixture, kind: 'Interaction' | 'Session'): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM oidc_payloads WHERE kind = ${kind}`.execute(f.t.ctx.database.db);
  return rows[0].n;
}

/** A valid authorization request's parameters for the first-party client (PKCE S256). */
async function authorizationParams(f: OidcFixture, extra: Record<string, string> = {}) {
  const config = await rpConfig(f, FIRST_PARTY);
  const { url } = await startAuthorization(f, config, extra);
  return url.searchParams;
}

describe('OpenID Provider: the per-address limit on /oidc/auth and /oidc/session/end', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    // The production default, stated here so that the test says what it checks.
    f = await oidcFixture({ RATE_LIMIT_OIDC_AUTHORIZATIONS: '60/60' }, server);
  });
  afterAll(async () => {
    await f.close();
  });

  it('counts GETs, HEADs and POSTs to /oidc/auth per address together: the 61st in the window is 429 with Retry-After, another address goes on', async () => {
    const params = await authorizationParams(f);
    const get = (remoteAddress: string, method: 'GET' | 'HEAD' = 'GET') =>
      f.t.app.inject({ method, url: `/oidc/auth?${params}`, remoteAddress });
    const post = (remoteAddress: string) =>
      f.t.app.inject({
        method: 'POST',
        url: '/oidc/auth',
        headers: FORM,
        payload: params.toString(),
        remoteAddress,
      });
    for (let i = 0; i < 60; i++) {
      const res = await [get, post, (a: string) => get(a, 'HEAD')][i % 3]('203.0.113.7');
      expect(res.statusCode, `request ${i + 1}`).toBe(303);
    }
    const before = await stored(f, 'Interaction');
    for (const refused of [await get('203.0.113.7'), await post('203.0.113.7')]) {
      expect(refused.statusCode).toBe(429);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // A page for the person in the browser, in the provider's own error style, never cached or framed.
      expect(String(refused.headers['content-type'])).toMatch(/^text\/html/);
      expect(refused.headers['cache-control']).toBe('no-store');
      expect(refused.headers['x-frame-options']).toBe('DENY');
      expect(refused.body).toContain('Too many sign-in requests');
      expect(refused.body).toContain('<code>rate_limit.exceeded</code>');
    }
    expect(await stored(f, 'Interaction')).toBe(before);
    expect((await get('203.0.113.8')).statusCode).toBe(303);
    expect(await stored(f, 'Interaction')).toBe(before + 1);
  });

  it('counts an IPv6 /64 as one address', async () => {
    const params = await authorizationParams(f);
    const get = (remoteAddress: string) =>
      f.t.app.inject({ method: 'GET', url: `/oidc/auth?${params}`, remoteAddress });
    for (let i = 0; i < 60; i++) {
      expect((await get(`2001:db8:5:6::${(i + 1).toString(16)}`)).statusCode).toBe(303);
    }
    expect((await get('2001:db8:5:6:ffff:ffff:ffff:ffff')).statusCode).toBe(429);
    expect((await get('2001:db8:5:7::1')).statusCode).toBe(303);
  });

  it('limits /oidc/session/end the same way, on a count of its own', async () => {
    const end = (remoteAddress: string, method: 'GET' | 'POST') =>
      f.t.app.inject({
        method,
        url: method === 'GET' ? '/oidc/session/end?state=s' : '/oidc/session/end',
        ...(method === 'POST' ? { headers: FORM, payload: 'state=s' } : {}),
        remoteAddress,
      });
    for (let i = 0; i < 60; i++) {
      const res = await end('198.51.100.4', i % 2 ? 'POST' : 'GET');
      expect(res.statusCode, `request ${i + 1}`).toBeLessThan(400);
    }
    const sessions = await stored(f, 'Session');
    const refused = await end('198.51.100.4', 'GET');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(String(refused.headers['content-type'])).toMatch(/^text\/html/);
    expect(await stored(f, 'Session')).toBe(sessions);
    expect((await end('198.51.100.5', 'GET')).statusCode).toBe(200);
    // The authorization endpoint's count at this address is untouched by the logouts.
    const params = await authorizationParams(f);
    const auth = await f.t.app.inject({
      method: 'GET',
      url: `/oidc/auth?${params}`,
      remoteAddress: '198.51.100.4',
    });
    expect(auth.statusCode).toBe(303);
  });
});

describe('OpenID Provider: stored authorization parameters are capped', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({}, server);
  });
  afterAll(async () => {
    await f.close();
  });

  /** Sends the request; expects invalid_request by redirect to the registered redirect_uri, nothing stored. */
  async function expectRefusedByRedirect(params: URLSearchParams, method: 'GET' | 'POST' = 'GET') {
    const before = await stored(f, 'Interaction');
    const jar = new CookieJar();
    const first =
      method === 'GET'
        ? await fetch(`${f.origin}/oidc/auth?${params}`, { redirect: 'manual' })
        : await fetch(`${f.origin}/oidc/auth`, {
            method: 'POST',
            redirect: 'manual',
            headers: FORM,
            body: params.toString(),
          });
    const location = first.headers.get('location');
    expect(first.status, await first.text()).toBe(303);
    const landed = await browse(f, new URL(location as string, f.origin).href, jar);
    const callback = landed.callback as URL;
    expect(callback, JSON.stringify(landed.page)).toBeDefined();
    expect(`${callback.origin}${callback.pathname}`).toBe(f.redirectUri);
    expect(callback.searchParams.get('error')).toBe('invalid_request');
    expect(callback.searchParams.get('iss')).toBe(f.origin);
    expect(await stored(f, 'Interaction')).toBe(before);
    return callback;
  }

  it.each([
    ['state', 2049],
    ['nonce', 2049],
    ['login_hint', 2049],
    ['ui_locales', 2049],
    ['acr_values', 2049],
    ['max_age', 2049],
  ])('refuses a %s longer than 2,048 bytes with invalid_request by redirect', async (name, length) => {
    const value = name === 'max_age' ? `${'0'.repeat(length - 1)}1` : 'a'.repeat(length);
    const params = await authorizationParams(f, { [name]: value });
    const callback = await expectRefusedByRedirect(params);
    expect(callback.searchParams.get('error_description')).toContain(name);
  });

  it('counts bytes, not characters', async () => {
    // 1,025 two-byte characters: 2,050 bytes.
    const params = await authorizationParams(f, { login_hint: 'é'.repeat(1025) });
    await expectRefusedByRedirect(params);
  });

  it('refuses parameters longer than 12,288 bytes together, each under its own cap', async () => {
    const each = 'b'.repeat(2040);
    const params = await authorizationParams(f, {
      state: each,
      nonce: each,
      login_hint: each,
      ui_locales: each,
      acr_values: each,
      claims_locales: each,
    });
    const callback = await expectRefusedByRedirect(params, 'POST');
    expect(callback.searchParams.get('error_description')).toContain('12288');
  });

  it('still accepts parameters at the cap', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const state = 's'.repeat(2048);
    const nonce = 'n'.repeat(2048);
    const auth = await startAuthorization(f, config, { state, nonce });
    const landed = await browse(f, auth.url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    expect(tokens.claims()?.nonce).toBe(nonce);
  });

  it('shows an error page, never a redirect, for an oversized parameter with an unregistered redirect_uri', async () => {
    const params = await authorizationParams(f, { state: 'a'.repeat(5000) });
    params.set('redirect_uri', 'http://127.0.0.1:9/elsewhere');
    const res = await fetch(`${f.origin}/oidc/auth?${params}`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('caps a pushed authorization request the same way', async () => {
    const params = await authorizationParams(f, { state: 'p'.repeat(3000) });
    const res = await fetch(`${f.origin}/oidc/request`, {
      method: 'POST',
      headers: {
        ...FORM,
        authorization: `Basic ${Buffer.from(`${FIRST_PARTY.id}:${FIRST_PARTY.secret}`).toString('base64')}`,
      },
      body: params.toString(),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe('invalid_request');
  });

  it('refuses an oversized state at /oidc/session/end with a page before anything is stored', async () => {
    const before = await stored(f, 'Session');
    const res = await fetch(`${f.origin}/oidc/session/end?state=${'x'.repeat(2049)}`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(String(res.headers.get('content-type'))).toMatch(/^text\/html/);
    expect(await res.text()).toContain('invalid_request');
    expect(await stored(f, 'Session')).toBe(before);
  });
});

describe('OpenID Provider: POST to /oidc/auth and /oidc/session/end', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({}, server);
  });
  afterAll(async () => {
    await f.close();
  });

  it('signs a person in from a form POST to /oidc/auth exactly as from a GET', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config);
    const posted = await fetch(`${f.origin}/oidc/auth`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...FORM, cookie: jar.header() },
      body: auth.url.searchParams.toString(),
    });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('cache-control')).toBe('no-store');
    const location = new URL(posted.headers.get('location') as string, f.origin);
    // The same request as a GET: same path, the form's parameters as the query.
    expect(location.pathname).toBe('/oidc/auth');
    expect([...location.searchParams].sort()).toEqual([...auth.url.searchParams].sort());
    const landed = await browse(f, location.href, jar);
    const callback = landed.callback as URL;
    expect(callback, JSON.stringify(landed.page)).toBeDefined();
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    expect(tokens.claims()?.sub).toBe(person.identityId);
  });

  it('answers a POSTed prompt=none for a signed-in browser with a code, and without a session with login_required', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    for (const [cookies, expected] of [
      [jar, 'code'],
      [new CookieJar(), 'login_required'],
    ] as const) {
      const auth = await startAuthorization(f, config, { prompt: 'none' });
      const posted = await fetch(`${f.origin}/oidc/auth`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...FORM, cookie: cookies.header() },
        body: auth.url.searchParams.toString(),
      });
      expect(posted.status).toBe(303);
      const landed = await browse(
        f,
        new URL(posted.headers.get('location') as string, f.origin).href,
        cookies,
      );
      const callback = landed.callback as URL;
      if (expected === 'code') expect(callback.searchParams.get('code')).toBeTruthy();
      else expect(callback.searchParams.get('error')).toBe('login_required');
    }
  });

  it('sends a POST without a hosted session to the hosted sign-in, as a GET does', async () => {
    const params = await authorizationParams(f);
    const posted = await fetch(`${f.origin}/oidc/auth`, {
      method: 'POST',
      redirect: 'manual',
      headers: FORM,
      body: params.toString(),
    });
    const landed = await browse(
      f,
      new URL(posted.headers.get('location') as string, f.origin).href,
      new CookieJar(),
    );
    expect(landed.page?.location).toMatch(/\/account\/#\/authorize\//);
  });

  it('refuses a POST that is not a form with a page', async () => {
    const res = await fetch(`${f.origin}/oidc/auth`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json' },
      body: '{"client_id":"dashboard"}',
    });
    expect(res.status).toBe(400);
    expect(String(res.headers.get('content-type'))).toMatch(/^text\/html/);
    expect(res.headers.get('location')).toBeNull();
  });

  it('signs out from a form POST to /oidc/session/end exactly as from a GET, through the confirmation form', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config);
    const landed = await browse(f, auth.url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const logoutsBefore = f.logoutTokens.length;
    const posted = await fetch(`${f.origin}/oidc/session/end`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...FORM, cookie: jar.header() },
      body: new URLSearchParams({
        id_token_hint: tokens.id_token as string,
        post_logout_redirect_uri: 'http://127.0.0.1:9/signed-out',
        state: 'bye',
      }).toString(),
    });
    expect(posted.status).toBe(303);
    const location = new URL(posted.headers.get('location') as string, f.origin);
    expect(location.pathname).toBe('/oidc/session/end');
    const page = await fetch(location, { headers: { cookie: jar.header() } });
    jar.take(page);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('Sign out of Dashboard?');
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
    expect(xsrf).toBeTruthy();
    const confirm = await fetch(`${f.origin}/oidc/session/end/confirm`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...FORM, cookie: jar.header() },
      body: new URLSearchParams({ xsrf: xsrf as string, logout: 'yes' }),
    });
    expect(confirm.status).toBe(303);
    expect(confirm.headers.get('location')).toBe('http://127.0.0.1:9/signed-out?state=bye');
    expect(f.logoutTokens.length).toBeGreaterThan(logoutsBefore);
    expect(confirm.headers.getSetCookie().some((c) => c.startsWith('__Host-identity-session=;'))).toBe(true);
  });
});
