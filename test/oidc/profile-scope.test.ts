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

/*
 * Issue 46, item 3: the `profile` scope answers the identity's name and language (name,
 * given_name, family_name, locale), each only when the identity has it, read when asked (a name
 * changed after consent is in the next userinfo answer). Without the scope, none of them.
 */
describe('OpenID Provider: the profile scope', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture();
  });
  afterAll(async () => {
    await f.close();
  });

  async function granted(scope: string) {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { scope });
    const landed = await browse(f, auth.url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const api = await signIn(f.t.app, person);
    const patch = async (payload: Record<string, unknown>) => {
      const res = await f.t.app.inject({
        method: 'PATCH',
        url: '/api/v1/account',
        headers: bearer(api.accessToken),
        payload,
      });
      expect(res.statusCode, res.body).toBe(200);
    };
    const userinfo = () => client.fetchUserInfo(config, tokens.access_token, person.identityId);
    return { person, config, tokens, patch, userinfo };
  }

  it('answers the name and language when set, each only when set, as they are now', async () => {
    const g = await granted('openid profile');
    // No name yet: the language alone (every identity has one).
    expect(await g.userinfo()).toEqual({ sub: g.person.identityId, locale: 'en' });

    await g.patch({ givenName: 'Ada', locale: 'fr' });
    expect(await g.userinfo()).toEqual({
      sub: g.person.identityId,
      name: 'Ada',
      given_name: 'Ada',
      locale: 'fr',
    });

    await g.patch({ familyName: 'Lovelace' });
    expect(await g.userinfo()).toMatchObject({ name: 'Ada Lovelace', family_name: 'Lovelace' });

    // The display name is what applications show.
    await g.patch({ displayName: 'Countess of Lovelace' });
    const info = await g.userinfo();
    expect(info).toEqual({
      sub: g.person.identityId,
      name: 'Countess of Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
      locale: 'fr',
    });
    // Not the email scope's claims: not asked for.
    expect(info.email).toBeUndefined();

    // A refreshed grant reads the identity again (the account lookup, not the token's join).
    const renewed = await client.refreshTokenGrant(g.config, g.tokens.refresh_token as string);
    await g.patch({ givenName: null, displayName: '' });
    const after = await client.fetchUserInfo(g.config, renewed.access_token, g.person.identityId);
    expect(after).toEqual({
      sub: g.person.identityId,
      name: 'Lovelace',
      family_name: 'Lovelace',
      locale: 'fr',
    });
  });

  it('answers none of them without the profile scope', async () => {
    const g = await granted('openid email');
    await g.patch({ givenName: 'Grace', familyName: 'Hopper' });
    const info = await g.userinfo();
    expect(info).toEqual({ sub: g.person.identityId, email: g.person.email, email_verified: true });
  });

  it('lists the claims in the discovery document', async () => {
    const res = await fetch(`${f.origin}/.well-known/openid-configuration`);
    const doc = (await res.json()) as { claims_supported: string[]; scopes_supported: string[] };
    expect(doc.scopes_supported).toContain('profile');
    expect(doc.claims_supported).toEqual(
      expect.arrayContaining(['name', 'given_name', 'family_name', 'locale']),
    );
  });
});
