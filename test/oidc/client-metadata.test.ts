import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OIDC_SCOPES, pageImageOrigins } from '../../src/config.js';
import { contentSecurityPolicy } from '../../src/features/account-ui/routes.js';
import {
  browse,
  CookieJar,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { adminCall } from './support.js';

/*
 * RFC 7591 and OpenID Connect Registration metadata in OIDC_CLIENTS reach the provider
 * (docs/oidc.md, "Clients"): private_key_jwt with a real signed assertion, a signed userinfo, the
 * client's scope and default_max_age, and the display metadata the consent page shows.
 */

const RICH = {
  id: 'rich-app',
  secret: `r-${'q'.repeat(40)}`,
  logo: 'https://cdn.rich.example/logo.png',
};
const KEYS_CLIENT = 'keys-app';

let f: OidcFixture;
let assertionKey: CryptoKey;
let tokenEndpoint: string;

beforeAll(async () => {
  const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  assertionKey = pair.privateKey;
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'keys-app-1', use: 'sig' };
  const redirectUri = 'http://127.0.0.1:9/callback';
  const clients = [
    {
      client_id: RICH.id,
      client_secret: RICH.secret,
      client_name: 'Rich App',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid email offline_access',
      default_max_age: 600,
      require_auth_time: true,
      id_token_signed_response_alg: 'EdDSA',
      userinfo_signed_response_alg: 'EdDSA',
      logo_uri: RICH.logo,
      client_uri: 'https://rich.example/',
      policy_uri: 'https://rich.example/privacy',
      tos_uri: 'https://rich.example/terms',
      contacts: ['ops@rich.example'],
      first_party: true,
    },
    {
      client_id: KEYS_CLIENT,
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [publicJwk] },
      grant_types: ['client_credentials'],
      response_types: [],
    },
  ];
  f = await oidcFixture({ OIDC_CLIENTS: JSON.stringify(clients) });
  tokenEndpoint = `${f.origin}/oidc/token`;
});
afterAll(async () => {
  await f.close();
});

async function assertion(key: CryptoKey, over: Record<string, unknown> = {}) {
  return new SignJWT({ ...over })
    .setProtectedHeader({ alg: 'EdDSA', kid: 'keys-app-1' })
    .setIssuer(KEYS_CLIENT)
    .setSubject(KEYS_CLIENT)
    .setAudience(tokenEndpoint)
    .setJti(randomUUID())
    .setIssuedAt()
    .setExpirationTime('1m')
    .sign(key);
}

function tokenRequest(clientAssertion: string) {
  return fetch(tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: KEYS_CLIENT,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: clientAssertion,
    }),
  });
}

describe('discovery', () => {
  it('offers private_key_jwt and the scopes OIDC_CLIENTS may name', async () => {
    const doc = await (await fetch(`${f.origin}/.well-known/openid-configuration`)).json();
    expect(doc.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect([...doc.token_endpoint_auth_signing_alg_values_supported].sort()).toEqual(['EdDSA', 'RS256']);
    expect([...doc.scopes_supported].sort()).toEqual([...OIDC_SCOPES].sort());
    expect([...doc.userinfo_signing_alg_values_supported].sort()).toEqual(['EdDSA', 'RS256']);
  });
});

describe('private_key_jwt', () => {
  it('a client assertion signed with the registered key gets a token, once', async () => {
    const signed = await assertion(assertionKey);
    const first = await tokenRequest(signed);
    expect(first.status, await first.clone().text()).toBe(200);
    expect((await first.json()).access_token).toBeTypeOf('string');
    // The same assertion again is a replay: the library keeps its jti until it expires.
    const replay = await tokenRequest(signed);
    expect(replay.status).toBe(401);
    expect((await replay.json()).error).toBe('invalid_client');
  });

  it('refuses an assertion signed with another key, and a secret instead of an assertion', async () => {
    const other = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await tokenRequest(await assertion(other.privateKey));
    expect(forged.status).toBe(401);
    expect((await forged.json()).error).toBe('invalid_client');
    const basic = Buffer.from(`${KEYS_CLIENT}:${'x'.repeat(43)}`).toString('base64');
    const withSecret = await fetch(tokenEndpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    expect(withSecret.status).toBe(401);
  });
});

describe('a client with RFC 7591 metadata in the code flow', () => {
  it('signs userinfo with its userinfo_signed_response_alg and its ID token with EdDSA', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, RICH);
    const { url, verifier, state, nonce } = await startAuthorization(f, config);
    const landed = await browse(f, url.href, jar);
    expect(landed.page).toBeUndefined();
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    expect(JSON.parse(Buffer.from(String(tokens.id_token).split('.')[0], 'base64url').toString()).alg).toBe(
      'EdDSA',
    );
    const res = await fetch(`${f.origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/jwt/);
    const jwks = createLocalJWKSet(await (await fetch(`${f.origin}/.well-known/jwks.json`)).json());
    const { payload, protectedHeader } = await jwtVerify(await res.text(), jwks, {
      issuer: f.origin,
      audience: RICH.id,
    });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload).toMatchObject({ sub: person.identityId, email: person.email });
  });

  it('refuses a scope outside its registered scope', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, RICH);
    const { url } = await startAuthorization(f, config, { scope: 'openid phone' });
    const landed = await browse(f, url.href, jar);
    expect(landed.callback?.searchParams.get('error')).toBe('invalid_scope');
  });

  it('default_max_age: a hosted session older than it is asked to sign in again', async () => {
    const config = await rpConfig(f, RICH);
    const now = f.t.clock.now();
    f.t.clock.set(new Date(now.getTime() - 700_000));
    const { jar: stale } = await hostedSignIn(f);
    f.t.clock.set(now);
    const { url } = await startAuthorization(f, config);
    const old = await browse(f, url.href, stale);
    expect(old.callback).toBeUndefined();
    expect(old.page?.location).toMatch(/\/account\/#\/authorize\//);
    const { jar: fresh } = await hostedSignIn(f);
    const again = await startAuthorization(f, config);
    expect((await browse(f, again.url.href, fresh)).callback?.searchParams.get('code')).toBeTruthy();
  });
});

describe('the consent page’s client details', () => {
  async function details(clientId: string, redirectUri = f.redirectUri) {
    const jar = new CookieJar();
    const config = await rpConfig(f, { id: clientId, secret: 'unused-for-the-redirect' });
    const { url } = await startAuthorization(f, config, { redirect_uri: redirectUri });
    const landed = await browse(f, url.href, jar);
    const uid = String(landed.page?.location).split('/').pop();
    const res = await fetch(`${f.origin}/oidc/interaction/${uid}/details`, {
      headers: { cookie: jar.header() },
    });
    expect(res.status).toBe(200);
    return (await res.json()).client;
  }

  it('carries the display metadata; the logo of OIDC_CLIENTS is in the pages’ img-src', async () => {
    expect(await details(RICH.id)).toEqual({
      clientId: RICH.id,
      name: 'Rich App',
      firstParty: true,
      logoUri: RICH.logo,
      clientUri: 'https://rich.example/',
      policyUri: 'https://rich.example/privacy',
      tosUri: 'https://rich.example/terms',
    });
    // The policy the hosted pages are served with (this app runs without them: ACCOUNT_UI off).
    const csp = contentSecurityPolicy(pageImageOrigins(f.t.ctx.config));
    expect(csp).toContain("img-src 'self' https://cdn.rich.example;");
  });

  it('a registered client’s logo elsewhere is not offered (the CSP would refuse it); its links are', async () => {
    const id = `reg-${randomUUID().slice(0, 8)}`;
    const r = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: id,
        client_name: 'Registered',
        redirect_uris: [f.redirectUri],
        logo_uri: 'https://elsewhere.example/logo.png',
        policy_uri: 'https://elsewhere.example/privacy',
      },
    });
    expect(r.statusCode, r.body).toBe(201);
    expect(await details(id)).toMatchObject({
      name: 'Registered',
      logoUri: null,
      policyUri: 'https://elsewhere.example/privacy',
      clientUri: null,
      tosUri: null,
    });
  });
});
