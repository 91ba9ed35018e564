import { createRequire } from 'node:module';
import { decodeProtectedHeader } from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browse,
  type CookieJar,
  confirmLogout,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  PUBLIC_CLIENT,
} from '../helpers/oidc.js';
import { adminCall } from './support.js';

/*
 * A relying party nobody on the project wrote: oauth4webapi (panva) used directly, with its strict
 * checks on: the discovery document's issuer, RFC 9207 `iss` on the authorization response, state,
 * PKCE S256, the ID token's iss, aud, exp, iat, sub, nonce and auth_time (and its signature against
 * the JWKS, which the library leaves to `validateApplicationLevelSignature`), the userinfo `sub`,
 * the refreshed ID token, and RP-initiated logout through the provider's confirmation form
 * (docs/oidc.md, "Relying parties tested").
 */
const VERSION = (createRequire(import.meta.url)('oauth4webapi/package.json') as { version: string }).version;

// The fixture's issuer is http://127.0.0.1:<port>. oauth4webapi refuses any non-https endpoint
// unless a request says allowInsecureRequests: every request below says it, only because the
// issuer is on http loopback; nothing else is relaxed.
const insecure = { [oauth.allowInsecureRequests]: true } as const;

const POST_LOGOUT = 'http://127.0.0.1:9/signed-out';

describe(`relying party: oauth4webapi ${VERSION} with its strict checks`, () => {
  let f: OidcFixture;
  let issuer: URL;
  let as: oauth.AuthorizationServer;
  /** A public client allowed refresh tokens and a post-logout redirect, made through the admin API. */
  const spa = { id: `spa-refresh-${Date.now().toString(36)}` };

  beforeAll(async () => {
    f = await oidcFixture();
    issuer = new URL(f.origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    const created = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: spa.id,
        client_name: 'SPA with refresh',
        token_endpoint_auth_method: 'none',
        redirect_uris: [f.redirectUri],
        post_logout_redirect_uris: [POST_LOGOUT],
        grant_types: ['authorization_code', 'refresh_token'],
        first_party: true,
      },
    });
    expect(created.statusCode, created.body).toBe(201);
  });
  afterAll(async () => {
    await f.close();
  });

  /** The client metadata oauth4webapi checks the ID token against: auth_time is required. */
  const metadata = (clientId: string): oauth.Client => ({ client_id: clientId, require_auth_time: true });

  /** The authorization request (PKCE S256, state, nonce), the hosted sign-in, the callback. */
  async function authorize(c: oauth.Client, jar: CookieJar, scope = 'openid email') {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const url = new URL(as.authorization_endpoint as string);
    url.search = new URLSearchParams({
      client_id: c.client_id,
      redirect_uri: f.redirectUri,
      response_type: 'code',
      scope,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    }).toString();
    const landed = await browse(f, url.href, jar);
    expect(landed.page, JSON.stringify(landed.page)).toBeUndefined();
    return { callback: landed.callback as URL, verifier, state, nonce };
  }

  /** Everything oauth4webapi checks after the callback, up to the verified ID token's claims. */
  async function exchange(
    c: oauth.Client,
    auth: oauth.ClientAuth,
    flow: Awaited<ReturnType<typeof authorize>>,
  ) {
    const params = oauth.validateAuthResponse(as, c, flow.callback, flow.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      c,
      auth,
      params,
      f.redirectUri,
      flow.verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, c, response, {
      expectedNonce: flow.nonce,
      requireIdToken: true,
      maxAge: 300,
    });
    // The library checks the ID token's claims; its signature it checks only when asked, here
    // against the provider's JWKS.
    await oauth.validateApplicationLevelSignature(as, response, insecure);
    const claims = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken;
    return { tokens, claims };
  }

  async function userinfo(c: oauth.Client, accessToken: string, sub: string) {
    const res = await oauth.userInfoRequest(as, c, accessToken, insecure);
    return oauth.processUserInfoResponse(as, c, sub, res);
  }

  async function refresh(c: oauth.Client, auth: oauth.ClientAuth, refreshToken: string) {
    const res = await oauth.refreshTokenGrantRequest(as, c, auth, refreshToken, insecure);
    return oauth.processRefreshTokenResponse(as, c, res);
  }

  /** RP-initiated logout: the end-session URL, the confirmation form answered "Sign out". */
  async function logout(jar: CookieJar, params: Record<string, string>) {
    const url = new URL(as.end_session_endpoint as string);
    url.search = new URLSearchParams(params).toString();
    return confirmLogout(f, url.href, jar);
  }

  it('discovers the issuer and the endpoints, with RFC 9207 iss and S256 advertised', async () => {
    // Why the option above: without it the library refuses the http issuer, in its words.
    await expect(oauth.discoveryRequest(issuer)).rejects.toThrow('only requests to HTTPS are allowed');
    // RFC 8414's well-known path gives the same issuer and the same document.
    const rfc8414 = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
    );
    expect(rfc8414).toEqual(as);
    expect(as.issuer).toBe(f.origin);
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.end_session_endpoint).toBe(`${f.origin}/oidc/session/end`);
    expect(as.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'none']),
    );
  });

  it('refuses an authorization response without iss or with another issuer (RFC 9207)', async () => {
    const c = metadata(FIRST_PARTY.id);
    const { jar } = await hostedSignIn(f);
    const flow = await authorize(c, jar);
    expect(flow.callback.searchParams.get('iss')).toBe(f.origin);
    const without = new URL(flow.callback);
    without.searchParams.delete('iss');
    expect(() => oauth.validateAuthResponse(as, c, without, flow.state)).toThrow(
      'response parameter "iss" (issuer) missing',
    );
    const other = new URL(flow.callback);
    other.searchParams.set('iss', 'http://127.0.0.1:1');
    expect(() => oauth.validateAuthResponse(as, c, other, flow.state)).toThrow(
      'unexpected "iss" (issuer) response parameter value',
    );
    expect(() => oauth.validateAuthResponse(as, c, flow.callback, 'another-state')).toThrow(
      'unexpected "state" response parameter value',
    );
    // The response itself passes every check.
    expect(oauth.validateAuthResponse(as, c, flow.callback, flow.state).get('code')).toBeTruthy();
  });

  it('confidential client (client_secret_basic): sign-in, userinfo, refresh, RP-initiated logout', async () => {
    const c = metadata(FIRST_PARTY.id);
    const auth = oauth.ClientSecretBasic(FIRST_PARTY.secret);
    const { person, jar } = await hostedSignIn(f);
    const flow = await authorize(c, jar);
    const { tokens, claims } = await exchange(c, auth, flow);
    expect(claims).toMatchObject({
      iss: f.origin,
      aud: FIRST_PARTY.id,
      sub: person.identityId,
      nonce: flow.nonce,
      amr: ['pwd'],
    });
    expect(claims.auth_time).toBeTypeOf('number');
    // No at_hash: the provider adds none to an ID token from the token endpoint (OPTIONAL for the
    // code flow, OpenID Connect Core 3.1.3.6), and oauth4webapi has no at_hash check to run.
    expect(claims.at_hash).toBeUndefined();
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.refresh_token).toBeTypeOf('string');

    const info = await userinfo(c, tokens.access_token, claims.sub);
    expect(info).toEqual({ sub: claims.sub, email: person.email, email_verified: true });
    // The userinfo `sub` check is the library's: another subject is refused.
    await expect(userinfo(c, tokens.access_token, 'someone-else')).rejects.toThrow(
      'unexpected "response" body "sub" property value',
    );

    const renewed = await refresh(c, auth, tokens.refresh_token as string);
    expect(renewed.access_token).not.toBe(tokens.access_token);
    expect(renewed.refresh_token).not.toBe(tokens.refresh_token);
    const again = oauth.getValidatedIdTokenClaims(renewed) as oauth.IDToken;
    expect(again).toMatchObject({ iss: f.origin, aud: FIRST_PARTY.id, sub: claims.sub, sid: claims.sid });
    expect((await userinfo(c, renewed.access_token, claims.sub)).email).toBe(person.email);
    // Rotation: the spent refresh token is refused in the protocol's words.
    await expect(refresh(c, auth, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });

    // A fresh grant for the logout (the replay above ended the previous one).
    const second = await exchange(c, auth, await authorize(c, jar));
    const done = await logout(jar, {
      id_token_hint: second.tokens.id_token as string,
      post_logout_redirect_uri: POST_LOGOUT,
      state: 'bye-basic',
    });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`${POST_LOGOUT}?state=bye-basic`);
    // The grant ended with the sessions: refresh and userinfo are refused.
    await expect(refresh(c, auth, second.tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(userinfo(c, second.tokens.access_token, claims.sub)).rejects.toBeInstanceOf(
      oauth.WWWAuthenticateChallengeError,
    );
  });

  it('public client (None) with a refresh grant: sign-in, userinfo, refresh, RP-initiated logout', async () => {
    const c = metadata(spa.id);
    const auth = oauth.None();
    const { person, jar } = await hostedSignIn(f);
    const flow = await authorize(c, jar);
    const { tokens, claims } = await exchange(c, auth, flow);
    expect(claims).toMatchObject({ iss: f.origin, aud: spa.id, sub: person.identityId, nonce: flow.nonce });

    expect((await userinfo(c, tokens.access_token, claims.sub)).sub).toBe(person.identityId);

    const renewed = await refresh(c, auth, tokens.refresh_token as string);
    expect(oauth.getValidatedIdTokenClaims(renewed)?.sub).toBe(claims.sub);
    const info = await userinfo(c, renewed.access_token, claims.sub);
    expect(info.email).toBe(person.email);

    const done = await logout(jar, {
      id_token_hint: renewed.id_token as string,
      post_logout_redirect_uri: POST_LOGOUT,
      state: 'bye-public',
    });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`${POST_LOGOUT}?state=bye-public`);
    await expect(refresh(c, auth, renewed.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('pushed authorization request (RFC 9126) with client_secret_basic, then the same checks', async () => {
    const c = metadata(FIRST_PARTY.id);
    const auth = oauth.ClientSecretBasic(FIRST_PARTY.secret);
    const { person, jar } = await hostedSignIn(f);
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const pushed = await oauth.processPushedAuthorizationResponse(
      as,
      c,
      await oauth.pushedAuthorizationRequest(
        as,
        c,
        auth,
        {
          redirect_uri: f.redirectUri,
          response_type: 'code',
          scope: 'openid email',
          code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          state,
          nonce,
        },
        insecure,
      ),
    );
    expect(pushed.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    const url = new URL(as.authorization_endpoint as string);
    url.search = new URLSearchParams({ client_id: c.client_id, request_uri: pushed.request_uri }).toString();
    const landed = await browse(f, url.href, jar);
    expect(landed.page, JSON.stringify(landed.page)).toBeUndefined();
    const { claims } = await exchange(c, auth, { callback: landed.callback as URL, verifier, state, nonce });
    expect(claims).toMatchObject({ sub: person.identityId, nonce });
  });

  it('an EdDSA client: the Ed25519-signed ID token passes the same checks, selected by kid from the one JWKS', async () => {
    const id = `eddsa-${Date.now().toString(36)}`;
    const created = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: id,
        token_endpoint_auth_method: 'none',
        redirect_uris: [f.redirectUri],
        id_token_signed_response_alg: 'EdDSA',
        first_party: true,
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    // The library accepts only the registered algorithm for this client's ID tokens.
    const c: oauth.Client = { ...metadata(id), id_token_signed_response_alg: 'EdDSA' };
    const { person, jar } = await hostedSignIn(f);
    const { tokens, claims } = await exchange(c, oauth.None(), await authorize(c, jar));
    expect(decodeProtectedHeader(tokens.id_token as string).alg).toBe('EdDSA');
    expect(claims.sub).toBe(person.identityId);
    expect((await userinfo(c, tokens.access_token, claims.sub)).sub).toBe(person.identityId);
  });

  it("the fixture's public client (None, no refresh grant): no refresh token; logout ends on the provider's page", async () => {
    const c = metadata(PUBLIC_CLIENT.id);
    const { person, jar } = await hostedSignIn(f);
    const flow = await authorize(c, jar);
    const { tokens, claims } = await exchange(c, oauth.None(), flow);
    expect(claims.sub).toBe(person.identityId);
    // The client is registered without refresh_token: the provider issues none.
    expect(tokens.refresh_token).toBeUndefined();
    expect((await userinfo(c, tokens.access_token, claims.sub)).sub).toBe(claims.sub);

    // No post_logout_redirect_uri registered: the provider shows its own "signed out" page.
    const done = await logout(jar, { id_token_hint: tokens.id_token as string, client_id: c.client_id });
    expect(done.status).toBe(303);
    const after = await fetch(new URL(done.headers.get('location') as string, f.origin), {
      headers: { cookie: jar.header() },
    });
    expect(after.status).toBe(200);
    expect(await after.text()).toContain('You are signed out');
    await expect(userinfo(c, tokens.access_token, claims.sub)).rejects.toBeInstanceOf(
      oauth.WWWAuthenticateChallengeError,
    );
  });
});
