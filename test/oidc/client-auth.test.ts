import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY, type OidcFixture, oidcFixture, rpConfig, THIRD_PARTY } from '../helpers/oidc.js';

type Method = 'client_secret_basic' | 'client_secret_post';

/** One request to a client-authenticated endpoint, the credentials presented by `method`. */
function presented(
  f: OidcFixture,
  path: string,
  c: { id: string; secret: string },
  method: Method,
  params: Record<string, string>,
) {
  const body = new URLSearchParams(params);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (method === 'client_secret_basic') {
    const pair = `${encodeURIComponent(c.id)}:${encodeURIComponent(c.secret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  } else {
    body.set('client_id', c.id);
    body.set('client_secret', c.secret);
  }
  return fetch(`${f.origin}${path}`, { method: 'POST', headers, body });
}

// Client authentication at the token endpoint draws on the client's guess budget
// (RATE_LIMIT_GUESSES): wrong secrets count, and past the free failures an attempt made before
// its wait answers 429 with Retry-After, right secret or wrong, unchecked.
describe('OpenID Provider: client authentication is budgeted', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({ RATE_LIMIT_GUESSES: '10/3600' });
  });
  afterAll(async () => {
    await f.close();
  });

  // The partner app is registered with client_secret_post: its secret goes in the body.
  const tokenRequest = (secret: string) =>
    presented(f, '/oidc/token', { id: THIRD_PARTY.id, secret }, 'client_secret_post', {
      grant_type: 'client_credentials',
    });

  it('counts wrong secrets and then refuses even the right one until the wait is over', async () => {
    const wrong = await tokenRequest('not-the-secret');
    expect(wrong.status).toBe(401);
    expect((await wrong.json()).error).toBe('invalid_client');
    for (let i = 0; i < 9; i++) expect((await tokenRequest(`wrong-${i}`)).status).toBe(401);
    const early = await tokenRequest(THIRD_PARTY.secret);
    expect(early.status).toBe(429);
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await early.json()).toEqual({
      error: 'invalid_client',
      error_description: 'too many failed client authentications',
    });
    f.t.clock.advance(3600);
    const config = await rpConfig(f, THIRD_PARTY, true);
    const tokens = await client.clientCredentialsGrant(config);
    expect(tokens.access_token).toBeTruthy();
  });

  it('never stores the secret: only its SHA-256 is compared', async () => {
    const logs = f.t.logs();
    expect(logs).not.toContain(THIRD_PARTY.secret);
  });
});

/*
 * A confidential client authenticates by the token_endpoint_auth_method registered for it and by no
 * other (docs/oidc.md, "Clients"): its right secret presented the other way is refused exactly as a
 * wrong secret presented that way is, and counts against its guess budget as one.
 */
describe('OpenID Provider: client authentication by the registered method only', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({ RATE_LIMIT_GUESSES: '10/3600' });
  });
  afterAll(async () => {
    await f.close();
  });

  const endpoints = [
    ['/oidc/token', { grant_type: 'refresh_token', refresh_token: 'no-such-refresh-token' }],
    ['/oidc/token/introspection', { token: 'no-such-token' }],
    ['/oidc/token/revocation', { token: 'no-such-token' }],
  ] as const;

  /** Status, the headers a refusal could differ by, and the body: what a caller can compare. */
  async function answer(res: Response) {
    return {
      status: res.status,
      contentType: res.headers.get('content-type'),
      wwwAuthenticate: res.headers.get('www-authenticate'),
      body: await res.text(),
    };
  }

  it.each([
    ['client_secret_basic', 'client_secret_post', FIRST_PARTY],
    ['client_secret_post', 'client_secret_basic', THIRD_PARTY],
  ] as const)('a client registered with %s presenting its right secret by %s is refused as a wrong secret is', async (_registered, other, c) => {
    for (const [path, params] of endpoints) {
      const right = await answer(await presented(f, path, c, other, params));
      const wrong = await answer(
        await presented(f, path, { id: c.id, secret: `${c.secret}-wrong` }, other, params),
      );
      expect(right.status, path).toBe(401);
      expect(JSON.parse(right.body), path).toMatchObject({ error: 'invalid_client' });
      expect(right, path).toEqual(wrong);
    }
  });

  it('accepts the registered method at every endpoint', async () => {
    for (const [c, method] of [
      [FIRST_PARTY, 'client_secret_basic'],
      [THIRD_PARTY, 'client_secret_post'],
    ] as const) {
      const [token, introspection, revocation] = await Promise.all(
        endpoints.map(([path, params]) => presented(f, path, c, method, params)),
      );
      // Past client authentication: the made-up refresh token is the grant's problem.
      expect(token.status, method).toBe(400);
      expect((await token.json()).error).toBe('invalid_grant');
      expect(introspection.status, method).toBe(200);
      expect(await introspection.json()).toEqual({ active: false });
      expect(revocation.status, method).toBe(200);
    }
    const machine = await presented(f, '/oidc/token', THIRD_PARTY, 'client_secret_post', {
      grant_type: 'client_credentials',
    });
    expect(machine.status).toBe(200);
    expect((await machine.json()).access_token).toBeTruthy();
  });

  it('counts a right secret by the wrong method as a failure, which never forgives the count', async () => {
    // The previous test ended in a success: the partner app starts with nothing counted.
    for (let i = 0; i < 10; i++) {
      const r = await presented(f, '/oidc/token', THIRD_PARTY, 'client_secret_basic', {
        grant_type: 'client_credentials',
      });
      expect(r.status).toBe(401);
    }
    const early = await presented(f, '/oidc/token', THIRD_PARTY, 'client_secret_post', {
      grant_type: 'client_credentials',
    });
    expect(early.status).toBe(429);
    f.t.clock.advance(3600);
    const later = await presented(f, '/oidc/token', THIRD_PARTY, 'client_secret_post', {
      grant_type: 'client_credentials',
    });
    expect(later.status).toBe(200);
  });
});
