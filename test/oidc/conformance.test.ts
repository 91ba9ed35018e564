import { createHash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browse,
  CookieJar,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  PUBLIC_CLIENT,
  rpConfig,
  startAuthorization,
  THIRD_PARTY,
} from '../helpers/oidc.js';

/*
 * Ports of the OpenID Foundation's Config OP and Basic OP checks that a server-side test can make:
 * discovery, RS256, nonce and state, code reuse, redirect URI, prompt and max_age, refresh bound to
 * its client, userinfo by GET and POST.
 */
describe('OpenID Provider: Config OP and Basic OP checks', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture();
  });
  afterAll(async () => {
    await f.close();
  });

  async function codeFlow(
    params: Record<string, string> = {},
    c: { id: string; secret?: string } = FIRST_PARTY,
  ) {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, c);
    const auth = await startAuthorization(f, config, params);
    const landed = await browse(f, auth.url.href, jar);
    return { person, jar, config, auth, landed };
  }

  it('publishes a discovery document at the origin with what the checks require', async () => {
    const res = await fetch(`${f.origin}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const d = (await res.json()) as Record<string, unknown>;
    expect(d.issuer).toBe(f.origin);
    for (const key of [
      'authorization_endpoint',
      'token_endpoint',
      'userinfo_endpoint',
      'jwks_uri',
      'end_session_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
    ]) {
      expect(String(d[key]).startsWith(`${f.origin}/`)).toBe(true);
    }
    expect(d.jwks_uri).toBe(`${f.origin}/.well-known/jwks.json`);
    expect(d.response_types_supported).toEqual(['code']);
    expect(d.subject_types_supported).toContain('public');
    expect(d.id_token_signing_alg_values_supported).toContain('RS256');
    expect(d.code_challenge_methods_supported).toEqual(['S256']);
    expect(d.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'email', 'phone', 'offline_access']),
    );
    expect(d.claims_supported).toEqual(
      expect.arrayContaining(['sub', 'email', 'email_verified', 'auth_time', 'amr', 'acr', 'sid']),
    );
    expect(d.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
    );
    expect(d.grant_types_supported).not.toContain('implicit');
    expect(d.grant_types_supported).not.toContain('password');
    expect(d.registration_endpoint).toBeUndefined();
    expect(d.backchannel_logout_supported).toBe(true);
    const rfc8414 = await fetch(`${f.origin}/.well-known/oauth-authorization-server`);
    expect(await rfc8414.json()).toEqual(d);
  });

  it('publishes one JWKS with unique key ids: the access-token key and the RS256 and EdDSA ID-token keys', async () => {
    const { keys } = (await (await fetch(`${f.origin}/.well-known/jwks.json`)).json()) as {
      keys: Record<string, unknown>[];
    };
    const kids = keys.map((k) => k.kid);
    expect(new Set(kids).size).toBe(kids.length);
    expect(keys.map((k) => k.alg)).toEqual(expect.arrayContaining(['RS256', 'EdDSA']));
    expect(keys.filter((k) => k.alg === 'EdDSA').length).toBe(2);
    for (const k of keys) expect(k.d).toBeUndefined();
  });

  it('signs ID tokens with RS256 under a published key, and round-trips nonce and state', async () => {
    const { config, auth, landed } = await codeFlow();
    const callback = landed.callback as URL;
    expect(callback.searchParams.get('state')).toBe(auth.state);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const header = decodeProtectedHeader(tokens.id_token as string);
    expect(header.alg).toBe('RS256');
    const { keys } = (await (await fetch(`${f.origin}/.well-known/jwks.json`)).json()) as {
      keys: { kid: string }[];
    };
    expect(keys.map((k) => k.kid)).toContain(header.kid);
    expect(decodeJwt(tokens.id_token as string).nonce).toBe(auth.nonce);
  });

  it('refuses a code used twice and revokes the access token the first use gave', async () => {
    const { config, auth, landed } = await codeFlow();
    const callback = landed.callback as URL;
    const opts = { pkceCodeVerifier: auth.verifier, expectedState: auth.state, expectedNonce: auth.nonce };
    const first = await client.authorizationCodeGrant(config, callback, opts);
    await expect(client.authorizationCodeGrant(config, callback, opts)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const introspected = await client.tokenIntrospection(config, first.access_token);
    expect(introspected.active).toBe(false);
  });

  it('shows an error page for an unregistered redirect_uri and never redirects there', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { redirect_uri: 'https://attacker.example/cb' });
    const res = await fetch(auth.url, { redirect: 'manual', headers: { cookie: jar.header() } });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toContain('redirect_uri');
  });

  it('requires PKCE with S256 and refuses plain', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const without = client.buildAuthorizationUrl(config, {
      redirect_uri: f.redirectUri,
      scope: 'openid',
      state: 's',
    });
    const a = await browse(f, without.href, jar);
    expect(a.callback?.searchParams.get('error')).toBe('invalid_request');
    const plain = client.buildAuthorizationUrl(config, {
      redirect_uri: f.redirectUri,
      scope: 'openid',
      state: 's',
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'plain',
    });
    const b = await browse(f, plain.href, jar);
    expect(b.callback?.searchParams.get('error')).toBe('invalid_request');
  });

  it('answers prompt=none without a session with login_required', async () => {
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { prompt: 'none' });
    const landed = await browse(f, auth.url.href, new CookieJar());
    expect(landed.callback?.searchParams.get('error')).toBe('login_required');
    expect(landed.callback?.searchParams.get('state')).toBe(auth.state);
  });

  it('continues prompt=none for a browser already signed in at the hosted pages', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { prompt: 'none' });
    const landed = await browse(f, auth.url.href, jar);
    expect(landed.callback?.searchParams.get('code')).toBeTruthy();
  });

  it('answers prompt=none with consent_required when a third-party client has no consent yet', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, THIRD_PARTY);
    const auth = await startAuthorization(f, config, { prompt: 'none' });
    const landed = await browse(f, auth.url.href, jar);
    expect(landed.callback?.searchParams.get('error')).toBe('consent_required');
    expect(landed.callback?.searchParams.get('state')).toBe(auth.state);
  });

  it('sends a signed-in person to the hosted sign-in page for prompt=login and for an exceeded max_age', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const first = await browse(f, (await startAuthorization(f, config)).url.href, jar);
    expect(first.callback?.searchParams.get('code')).toBeTruthy();
    const login = await browse(f, (await startAuthorization(f, config, { prompt: 'login' })).url.href, jar);
    expect(login.page?.location).toMatch(/\/account\/#\/authorize\/[\w-]+$/);
    // max_age=0: no sign-in is ever fresh enough.
    const aged = await browse(f, (await startAuthorization(f, config, { max_age: '0' })).url.href, jar);
    expect(aged.page?.location).toMatch(/\/account\/#\/authorize\/[\w-]+$/);
    // A generous max_age is satisfied by the hosted session.
    const fresh = await browse(f, (await startAuthorization(f, config, { max_age: '3600' })).url.href, jar);
    expect(fresh.callback?.searchParams.get('code')).toBeTruthy();
  });

  it('binds a refresh token to its client', async () => {
    const { config, auth, landed } = await codeFlow();
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const other = await rpConfig(f, THIRD_PARTY, true);
    await expect(client.refreshTokenGrant(other, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    // The rightful client can still use it: the other client's attempt spent nothing.
    const renewed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(renewed.access_token).toBeTruthy();
  });

  it('ends the grant when a rotated refresh token is replayed', async () => {
    const { config, auth, landed } = await codeFlow();
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const renewed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(client.refreshTokenGrant(config, renewed.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('answers userinfo by GET and by POST, with only the scopes granted', async () => {
    const { person, config, auth, landed } = await codeFlow();
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const byGet = await fetch(`${f.origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(byGet.status).toBe(200);
    expect(await byGet.json()).toEqual({ sub: person.identityId, email: person.email, email_verified: true });
    const byPost = await fetch(`${f.origin}/oidc/userinfo`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: tokens.access_token }),
    });
    expect(byPost.status).toBe(200);
    const bad = await fetch(`${f.origin}/oidc/userinfo`, { headers: { authorization: 'Bearer nope' } });
    expect(bad.status).toBe(401);
  });

  it('asks a third-party client for consent on the hosted page, and a public client always uses PKCE', async () => {
    const { landed } = await codeFlow({}, { id: THIRD_PARTY.id, secret: THIRD_PARTY.secret });
    // openid-client sends client_secret_basic by default; the consent page comes first anyway.
    expect(landed.page?.location).toMatch(/\/account\/#\/consent\/[\w-]+$/);
    const pub = await codeFlow({}, PUBLIC_CLIENT);
    expect(pub.landed.callback?.searchParams.get('code')).toBeTruthy();
  });

  /** Introspection as the partner app (client_secret_post), the answer as its bytes. */
  async function partnerIntrospects(token: string) {
    const res = await fetch(`${f.origin}/oidc/token/introspection`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: THIRD_PARTY.id, client_secret: THIRD_PARTY.secret, token }),
    });
    return { status: res.status, body: await res.text() };
  }

  it("introspects a token only for the client it was issued to: another client's is an unknown token", async () => {
    const { person, config, auth, landed } = await codeFlow();
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const unknown = await partnerIntrospects('no-such-token-anywhere');
    expect(unknown).toEqual({ status: 200, body: '{"active":false}' });
    // The dashboard's refresh and access tokens tell the partner app nothing (no sub, sid, scope).
    expect(await partnerIntrospects(tokens.refresh_token as string)).toEqual(unknown);
    expect(await partnerIntrospects(tokens.access_token)).toEqual(unknown);
    // Its own client still learns what they are.
    const refresh = await client.tokenIntrospection(config, tokens.refresh_token as string);
    expect(refresh).toMatchObject({ active: true, sub: person.identityId, client_id: FIRST_PARTY.id });
    const access = await client.tokenIntrospection(config, tokens.access_token);
    expect(access).toMatchObject({ active: true, sub: person.identityId, scope: 'openid email' });
    // A machine token likewise: the partner app's own, unknown to the dashboard.
    const machine = await client.clientCredentialsGrant(await rpConfig(f, THIRD_PARTY, true));
    const own = await partnerIntrospects(machine.access_token);
    expect(JSON.parse(own.body)).toMatchObject({ active: true, client_id: THIRD_PARTY.id });
    expect((await client.tokenIntrospection(config, machine.access_token)).active).toBe(false);
  });

  it('refuses the scopes of a person on client_credentials, and grants a machine token without them', async () => {
    const grant = (scope?: string) =>
      fetch(`${f.origin}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: THIRD_PARTY.id,
          client_secret: THIRD_PARTY.secret,
          ...(scope === undefined ? {} : { scope }),
        }),
      });
    const person = ['openid', 'offline_access', 'email', 'phone', 'profile', 'organization'];
    for (const scope of [...person, 'reports.read email']) {
      const refused = await grant(scope);
      expect(refused.status, scope).toBe(400);
      // The library's own refusal, naming the scope refused.
      expect(await refused.json(), scope).toEqual({
        error: 'invalid_scope',
        error_description: 'requested scope is not allowed',
        scope: scope.split(' ').find((s) => person.includes(s)),
      });
    }
    const bare = await grant();
    expect(bare.status).toBe(200);
    const bareBody = await bare.json();
    expect(bareBody.access_token).toBeTruthy();
    expect(bareBody.scope).toBeUndefined();
    // A value that is not one of the provider's scopes is dropped by the library (resource
    // indicators are off): the token is issued with no scope.
    const other = await grant('reports.read');
    expect(other.status).toBe(200);
    const otherBody = await other.json();
    expect(otherBody.access_token).toBeTruthy();
    expect(otherBody.scope).toBeUndefined();
    const introspected = await partnerIntrospects(otherBody.access_token);
    expect(JSON.parse(introspected.body)).toMatchObject({ active: true, client_id: THIRD_PARTY.id });
    expect(JSON.parse(introspected.body).scope).toBeUndefined();
    expect(JSON.parse(introspected.body).sub).toBeUndefined();
  });

  it('issues client-credentials tokens to a machine client, and counts wrong secrets', async () => {
    const config = await rpConfig(f, THIRD_PARTY, true);
    const tokens = await client.clientCredentialsGrant(config, { scope: '' });
    expect(tokens.access_token).toBeTruthy();
    const wrong = await rpConfig(f, { id: THIRD_PARTY.id, secret: `${THIRD_PARTY.secret}-wrong` }, true);
    await expect(client.clientCredentialsGrant(wrong)).rejects.toMatchObject({ error: 'invalid_client' });
    // The stored value is a hash: no table holds the secret.
    const hash = createHash('sha256').update(THIRD_PARTY.secret).digest('hex');
    expect(hash).toHaveLength(64);
  });
});
