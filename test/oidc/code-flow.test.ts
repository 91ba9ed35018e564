import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, signIn } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';

describe('OpenID Provider: the code flow through the hosted session', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture();
  });
  afterAll(async () => {
    await f.close();
  });

  it('signs a person in, serves userinfo, refreshes, and ends the grant with sign-out everywhere', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const { url, verifier, state, nonce } = await startAuthorization(f, config);
    const landed = await browse(f, url.href, jar);
    expect(landed.page).toBeUndefined();
    const callback = landed.callback as URL;
    expect(callback.searchParams.get('state')).toBe(state);

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const claims = tokens.claims();
    expect(claims?.sub).toBe(person.identityId);
    expect(claims?.auth_time).toBeTypeOf('number');
    expect(claims?.sid).toBeTypeOf('string');
    expect(claims?.amr).toEqual(['pwd']);
    expect(claims?.acr).toBeTruthy();
    expect(tokens.refresh_token).toBeTypeOf('string');

    const info = await client.fetchUserInfo(config, tokens.access_token, person.identityId);
    expect(info.email).toBe(person.email);
    expect(info.email_verified).toBe(true);

    const renewed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(renewed.access_token).not.toBe(tokens.access_token);

    // Sign-out everywhere through the service's own API ends the grant on every path.
    const api = await signIn(f.t.app, person);
    const out = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/everywhere',
      headers: bearer(api.accessToken),
    });
    expect(out.statusCode).toBe(204);
    await expect(client.refreshTokenGrant(config, renewed.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const introspected = await client.tokenIntrospection(config, renewed.access_token);
    expect(introspected.active).toBe(false);
    await expect(client.fetchUserInfo(config, renewed.access_token, person.identityId)).rejects.toBeTruthy();

    await f.t.ctx.oidc.sweep();
    expect(f.logoutTokens.length).toBe(1);
    expect(f.t.logs()).not.toContain('back-channel logout not delivered');
  });
});
