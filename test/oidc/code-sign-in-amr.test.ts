import * as client from 'openid-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPerson } from '../helpers/identities.js';
import {
  browse,
  CookieJar,
  FIRST_PARTY,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { waitForCode } from '../helpers/outbox.js';

/*
 * Issue 45: a hosted session opened by a code sent to the address is reported to relying parties
 * as one factor: amr ["otp", "email"] (RFC 8176: a one-time code, by email), acr single-factor.
 */

let f: OidcFixture;
beforeAll(async () => {
  f = await oidcFixture({ SIGN_IN_CODES: 'email,sms', SIGN_IN_CODES_SIGN_UP: 'on' });
});
afterAll(async () => {
  await f.close();
});

/** The ID token's claims for a session handed to the hosted pages by its refresh token. */
async function idTokenClaims(refreshToken: string) {
  const jar = new CookieJar();
  const handed = await fetch(`${f.origin}/api/v1/browser-session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.origin },
    body: JSON.stringify({ refreshToken }),
  });
  expect(handed.status).toBe(201);
  jar.take(handed);
  const config = await rpConfig(f, FIRST_PARTY);
  const { url, verifier, state, nonce } = await startAuthorization(f, config);
  const landed = await browse(f, url.href, jar);
  const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
  });
  return tokens.claims();
}

it('a sign-up by code on SMS gives the ID token amr ["otp", "sms"] and the single-factor acr', async () => {
  const phone = { identifierType: 'phone', identifier: '06 12 34 56 77', country: 'FR' };
  const sent = await f.t.app.inject({ method: 'POST', url: '/api/v1/sign-ups', payload: phone });
  expect(sent.statusCode, sent.body).toBe(201);
  const code = await waitForCode(f.t.config.dataDir, '+33612345677', 1);
  const confirmed = await f.t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ups/confirmations',
    payload: { ...phone, code },
  });
  expect(confirmed.statusCode, confirmed.body).toBe(201);
  const claims = await idTokenClaims(confirmed.json().data.refreshToken);
  expect(claims?.amr).toEqual(['otp', 'sms']);
  expect(claims?.acr).toBe('urn:identity-service:acr:single-factor');
});

it('a code sign-in handed to the hosted session gives the ID token amr ["otp", "email"] and the single-factor acr', async () => {
  const person = await createPerson(f.t.ctx);
  const address = { identifierType: 'email', identifier: person.email };
  const sent = await f.t.app.inject({ method: 'POST', url: '/api/v1/sign-ins/codes', payload: address });
  expect(sent.statusCode, sent.body).toBe(201);
  const code = await waitForCode(f.t.config.dataDir, person.email, 1);
  const signedIn = await f.t.app.inject({
    method: 'POST',
    url: `/api/v1/sign-ins/codes/${sent.json().data.signInCodeId}`,
    payload: { ...address, code },
  });
  expect(signedIn.statusCode, signedIn.body).toBe(201);
  const jar = new CookieJar();
  const handed = await fetch(`${f.origin}/api/v1/browser-session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.origin },
    body: JSON.stringify({ refreshToken: signedIn.json().data.refreshToken }),
  });
  expect(handed.status).toBe(201);
  jar.take(handed);

  const config = await rpConfig(f, FIRST_PARTY);
  const { url, verifier, state, nonce } = await startAuthorization(f, config);
  const landed = await browse(f, url.href, jar);
  const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
  });
  expect(tokens.claims()?.amr).toEqual(['otp', 'email']);
  expect(tokens.claims()?.acr).toBe('urn:identity-service:acr:single-factor');
});
