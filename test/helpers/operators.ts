import * as client from 'openid-client';
import { CONSOLE_CALLBACK_PATH, CONSOLE_CLIENT_ID } from '../../src/features/oidc/console-client.js';
import { DEFAULT_POLICY, type Factor, personWithFactor, ticketFor, totp } from '../second-factors/helpers.js';
import { createPerson, type Person, signIn } from './identities.js';
import { browse, CookieJar, type OidcFixture, rpConfig } from './oidc.js';

/** The admin listener's origin in tests (ADMIN_PORT of test/helpers/admin.ts; it never listens). */
export const CONSOLE_ORIGIN = 'http://127.0.0.1:3999';

/** A person who may become an operator: with an authenticator (`factor`) or with a password only. */
export interface Candidate {
  person: Person;
  factor?: Factor;
}

/** A fresh person holding a verified authenticator, enrolled through the service's routes. */
export async function withAuthenticator(f: OidcFixture): Promise<Candidate> {
  const { person, factor } = await personWithFactor(f.t);
  return { person, factor };
}

export async function passwordOnly(f: OidcFixture): Promise<Candidate> {
  return { person: await createPerson(f.t.ctx) };
}

/**
 * What the console's sign-in does for `c` in a browser: the hosted sign-in (password, then the
 * authenticator's code when `c` holds one), then the authorization code flow of the built-in
 * `console` client with PKCE, its code exchanged at the token endpoint: the access token.
 */
/** The hosted sign-in of `c` in a fresh browser (password, then the authenticator's code): its jar. */
export async function hostedOperatorSignIn(f: OidcFixture, c: Candidate): Promise<CookieJar> {
  let refreshToken: string;
  if (c.factor) {
    const ticket = await ticketFor(f.t.app, c.person);
    const done = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/second-factors',
      payload: { secondFactorTicket: ticket, code: totp(c.factor.secret, DEFAULT_POLICY, f.t.clock.now()) },
    });
    if (done.statusCode !== 201) throw new Error(`second step failed: ${done.statusCode} ${done.body}`);
    // The next code computed belongs to a step never used.
    f.t.clock.advance(DEFAULT_POLICY.period);
    refreshToken = done.json().data.refreshToken;
  } else {
    refreshToken = (await signIn(f.t.app, c.person)).refreshToken;
  }
  const jar = new CookieJar();
  const handover = await fetch(`${f.origin}/api/v1/browser-session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.origin },
    body: JSON.stringify({ refreshToken }),
  });
  if (handover.status !== 201) throw new Error(`handover failed: ${handover.status}`);
  jar.take(handover);
  return jar;
}

export async function consoleAccessToken(
  f: OidcFixture,
  c: Candidate,
  clientId = CONSOLE_CLIENT_ID,
  secret?: string,
): Promise<string> {
  const jar = await hostedOperatorSignIn(f, c);
  const config = await rpConfig(f, secret ? { id: clientId, secret } : { id: clientId });
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri:
      clientId === CONSOLE_CLIENT_ID ? `${CONSOLE_ORIGIN}${CONSOLE_CALLBACK_PATH}` : f.redirectUri,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  const landed = await browse(f, url.href, jar);
  if (!landed.callback) throw new Error(`no callback: ${JSON.stringify(landed.page)}`);
  const tokens = await client.authorizationCodeGrant(config, landed.callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
  });
  return tokens.access_token;
}
