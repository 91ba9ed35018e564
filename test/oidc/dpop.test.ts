import { calculateJwkThumbprint, exportJWK } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DpopTestKey, dpopProof, newDpopKey } from '../helpers/dpop.js';
import {
  browse,
  type CookieJar,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { adminCall } from './support.js';

/*
 * DPoP (RFC 9449, docs/oidc.md "DPoP"): openid-client's own DPoP support for the flows, and proofs
 * made here with jose for what a well-behaved client never sends (a replay, another URL, no nonce).
 */

const CONFIDENTIAL = { id: 'dpop-app' };
/** A public client with refresh tokens, registering nothing about DPoP: a proof is its choice. */
const PUBLIC_CLIENT = { id: 'spa-refresh' };

describe('OpenID Provider: DPoP (RFC 9449)', () => {
  let f: OidcFixture;
  let confidentialSecret: string;
  let tokenUrl: string;
  let userinfoUrl: string;

  beforeAll(async () => {
    f = await oidcFixture();
    tokenUrl = `${f.origin}/oidc/token`;
    userinfoUrl = `${f.origin}/oidc/userinfo`;
    const created = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: CONFIDENTIAL.id,
        redirect_uris: [f.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        first_party: true,
        dpop_bound_access_tokens: true,
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().data.dpop_bound_access_tokens).toBe(true);
    confidentialSecret = created.json().data.client_secret;
    const spa = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: PUBLIC_CLIENT.id,
        token_endpoint_auth_method: 'none',
        redirect_uris: [f.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        first_party: true,
      },
    });
    expect(spa.statusCode, spa.body).toBe(201);
  });
  afterAll(async () => {
    await f.close();
  });

  /** A code for `clientId` through the hosted session of `jar` (PKCE verifier returned). */
  async function code(config: client.Configuration, jar: CookieJar) {
    const started = await startAuthorization(f, config);
    const landed = await browse(f, started.url.href, jar);
    const callback = landed.callback as URL;
    expect(callback, JSON.stringify(landed.page)).toBeDefined();
    return { ...started, callback, code: callback.searchParams.get('code') as string };
  }

  /** The public client's token request by hand, with the proof given (or none). */
  function tokenRequest(body: Record<string, string>, dpop?: string) {
    return fetch(tokenUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(dpop ? { dpop } : {}),
      },
      body: new URLSearchParams({ client_id: PUBLIC_CLIENT.id, ...body }),
    });
  }

  /** A server nonce: the answer to a proof without one (use_dpop_nonce, RFC 9449 §8). */
  async function serverNonce(key: DpopTestKey): Promise<string> {
    const res = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: 'none' },
      await dpopProof(key, 'POST', tokenUrl),
    );
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe('use_dpop_nonce');
    return res.headers.get('dpop-nonce') as string;
  }

  function userinfo(scheme: 'DPoP' | 'Bearer', accessToken: string, dpop?: string) {
    return fetch(userinfoUrl, {
      headers: { authorization: `${scheme} ${accessToken}`, ...(dpop ? { dpop } : {}) },
    });
  }

  it('binds a public client’s tokens to its key with openid-client: DPoP tokens, userinfo, refresh', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, PUBLIC_CLIENT);
    const keyPair = await client.randomDPoPKeyPair('ES256');
    const DPoP = client.getDPoPHandle(config, keyPair);
    const c = await code(config, jar);

    // openid-client answers the provider's use_dpop_nonce challenge itself, once.
    const tokens = await client.authorizationCodeGrant(
      config,
      c.callback,
      { pkceCodeVerifier: c.verifier, expectedState: c.state, expectedNonce: c.nonce },
      undefined,
      { DPoP },
    );
    expect(tokens.token_type).toBe('dpop');
    expect(tokens.refresh_token).toBeTypeOf('string');

    const info = await client.fetchUserInfo(config, tokens.access_token, person.identityId, { DPoP });
    expect(info.sub).toBe(person.identityId);

    // A bound token is refused as a bearer token.
    const asBearer = await userinfo('Bearer', tokens.access_token);
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers.get('www-authenticate')).toMatch(/^DPoP /);

    const renewed = await client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, {
      DPoP,
    });
    expect(renewed.token_type).toBe('dpop');

    // The refresh token of a public client is bound too: stolen, with the thief's key or none,
    // it is refused, and the owner can still use it afterwards.
    const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    await expect(
      client.refreshTokenGrant(config, renewed.refresh_token as string, undefined, { DPoP: thief }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.refreshTokenGrant(config, renewed.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const again = await client.refreshTokenGrant(config, renewed.refresh_token as string, undefined, {
      DPoP,
    });
    expect(again.access_token).toBeTypeOf('string');
  });

  it('challenges a proof without a server nonce (use_dpop_nonce), then accepts it with one', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, PUBLIC_CLIENT);
    const key = await newDpopKey();
    const c = await code(config, jar);
    const body = {
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: f.redirectUri,
      code_verifier: c.verifier,
    };

    const challenged = await tokenRequest(body, await dpopProof(key, 'POST', tokenUrl));
    expect(challenged.status).toBe(400);
    expect(await challenged.json()).toMatchObject({ error: 'use_dpop_nonce' });
    const nonce = challenged.headers.get('dpop-nonce');
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const ok = await tokenRequest(body, await dpopProof(key, 'POST', tokenUrl, { nonce: nonce as string }));
    expect(ok.status).toBe(200);
    const tokens = await ok.json();
    expect(tokens.token_type).toBe('DPoP');

    // A nonce the server never made is challenged again, not accepted.
    const forged = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      await dpopProof(key, 'POST', tokenUrl, { nonce: 'A'.repeat(43) }),
    );
    expect(forged.status).toBe(400);
    expect((await forged.json()).error).toBe('use_dpop_nonce');
  });

  it('refuses a replayed proof at the token endpoint and at userinfo, and a proof for another request', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, PUBLIC_CLIENT);
    const key = await newDpopKey();
    const nonce = await serverNonce(key);
    const c = await code(config, jar);
    const tokenProof = await dpopProof(key, 'POST', tokenUrl, { nonce });
    const exchanged = await tokenRequest(
      {
        grant_type: 'authorization_code',
        code: c.code,
        redirect_uri: f.redirectUri,
        code_verifier: c.verifier,
      },
      tokenProof,
    );
    expect(exchanged.status).toBe(200);
    const tokens = await exchanged.json();

    // The same proof (same jti) again, for a refresh: refused, and the refresh token still works.
    const replayed = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      tokenProof,
    );
    expect(replayed.status).toBe(400);
    expect((await replayed.json()).error).toBe('invalid_grant');

    // At userinfo too, a proof without the server's nonce is challenged with one.
    const noNonce = await userinfo(
      'DPoP',
      tokens.access_token,
      await dpopProof(key, 'GET', userinfoUrl, { accessToken: tokens.access_token }),
    );
    expect(noNonce.status).toBe(401);
    expect(noNonce.headers.get('www-authenticate')).toMatch(/^DPoP .*error="use_dpop_nonce"/);
    expect(noNonce.headers.get('dpop-nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const userinfoProof = await dpopProof(key, 'GET', userinfoUrl, {
      nonce,
      accessToken: tokens.access_token,
    });
    expect((await userinfo('DPoP', tokens.access_token, userinfoProof)).status).toBe(200);
    const again = await userinfo('DPoP', tokens.access_token, userinfoProof);
    expect(again.status).toBe(401);
    expect(again.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/);

    // A proof made for the token endpoint, or for POST, is not one for GET /oidc/userinfo.
    const otherUrl = await userinfo(
      'DPoP',
      tokens.access_token,
      await dpopProof(key, 'GET', tokenUrl, { nonce, accessToken: tokens.access_token }),
    );
    expect(otherUrl.status).toBe(401);
    expect(otherUrl.headers.get('www-authenticate')).toMatch(/error="invalid_dpop_proof"/);
    expect(otherUrl.headers.get('www-authenticate')).toMatch(/htu mismatch/);
    const otherMethod = await userinfo(
      'DPoP',
      tokens.access_token,
      await dpopProof(key, 'POST', userinfoUrl, { nonce, accessToken: tokens.access_token }),
    );
    expect(otherMethod.status).toBe(401);
    expect(otherMethod.headers.get('www-authenticate')).toMatch(/htm mismatch/);
    // Another key's proof for the right request: the token is bound to the first key.
    const otherKey = await userinfo(
      'DPoP',
      tokens.access_token,
      await dpopProof(await newDpopKey(), 'GET', userinfoUrl, { nonce, accessToken: tokens.access_token }),
    );
    expect(otherKey.status).toBe(401);

    const refreshed = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      await dpopProof(key, 'POST', tokenUrl, { nonce }),
    );
    expect(refreshed.status).toBe(200);
  });

  it('lets one of two requests carrying the same proof at once through, never both', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, PUBLIC_CLIENT);
    const key = await newDpopKey();
    const nonce = await serverNonce(key);
    const c = await code(config, jar);
    const exchanged = await tokenRequest(
      {
        grant_type: 'authorization_code',
        code: c.code,
        redirect_uri: f.redirectUri,
        code_verifier: c.verifier,
      },
      await dpopProof(key, 'POST', tokenUrl, { nonce }),
    );
    const { access_token } = await exchanged.json();
    for (let round = 0; round < 5; round++) {
      const same = await dpopProof(key, 'GET', userinfoUrl, { nonce, accessToken: access_token });
      const answers = await Promise.all([
        userinfo('DPoP', access_token, same),
        userinfo('DPoP', access_token, same),
      ]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401]);
    }
  });

  it('requires a proof of a client registered with dpop_bound_access_tokens; introspection shows cnf.jkt', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, { id: CONFIDENTIAL.id, secret: confidentialSecret });
    const c = await code(config, jar);
    const checks = { pkceCodeVerifier: c.verifier, expectedState: c.state, expectedNonce: c.nonce };

    await expect(client.authorizationCodeGrant(config, c.callback, checks)).rejects.toMatchObject({
      error: 'invalid_grant',
    });

    // The same code, now with a proof (the refusal came before the code was spent).
    const keyPair = await client.randomDPoPKeyPair('ES256');
    const DPoP = client.getDPoPHandle(config, keyPair);
    const tokens = await client.authorizationCodeGrant(config, c.callback, checks, undefined, { DPoP });
    expect(tokens.token_type).toBe('dpop');

    const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
    const introspected = await client.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt } });
    // A confidential client's refresh token is bound to its authentication (RFC 9449 §5), yet
    // this client must still prove its key at every token request.
    const refresh = await client.tokenIntrospection(config, tokens.refresh_token as string);
    expect(refresh.active).toBe(true);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });

    const info = await client.fetchUserInfo(config, tokens.access_token, person.identityId, { DPoP });
    expect(info.sub).toBe(person.identityId);
    const asBearer = await userinfo('Bearer', tokens.access_token);
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/);
  });

  it('announces DPoP in discovery and takes the metadata from OIDC_CLIENTS and the admin API', async () => {
    const discovery = await (await fetch(`${f.origin}/.well-known/openid-configuration`)).json();
    expect(discovery.dpop_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'EdDSA']));

    const refused = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: 'dpop-bad',
        redirect_uris: [f.redirectUri],
        dpop_bound_access_tokens: 'yes',
      },
    });
    expect(refused.statusCode).toBe(400);

    const read = await adminCall(f.t.admin!, 'GET', `/oidc-clients/${PUBLIC_CLIENT.id}`);
    expect(read.json().data.dpop_bound_access_tokens).toBe(false);
    const etag = (await adminCall(f.t.admin!, 'GET', `/oidc-clients/${CONFIDENTIAL.id}`)).headers
      .etag as string;
    const changed = await adminCall(f.t.admin!, 'PATCH', `/oidc-clients/${CONFIDENTIAL.id}`, {
      payload: { dpop_bound_access_tokens: false },
      headers: { 'if-match': etag },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data.dpop_bound_access_tokens).toBe(false);
    const back = await adminCall(f.t.admin!, 'PATCH', `/oidc-clients/${CONFIDENTIAL.id}`, {
      payload: { dpop_bound_access_tokens: true },
      headers: { 'if-match': changed.headers.etag as string },
    });
    expect(back.statusCode, back.body).toBe(200);
  });
});
