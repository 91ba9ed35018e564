import { randomBytes } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPerson } from '../helpers/identities.js';
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
import { followToCallback, hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { call, ORGS } from '../organizations/support.js';
import { parse, TestIdp } from './idp.js';
import { adminCall, good, type SsoSetup, setUp } from './support.js';

/*
 * The OpenID Provider's home-realm discovery (docs/oidc.md, "Enterprise sign-in"): an application's
 * `login_hint` and `organization` send the person straight to the organization's IdP, and a
 * request naming an organization is answered only by a session made through its IdP. The relying
 * party is openid-client; the IdP is the SAML IdP the SSO tests make (test/sso/idp.ts).
 */

let f: OidcFixture;
let idp: TestIdp;
let other: TestIdp;
/** An organization with a verified domain and an enabled SAML connection to `idp`. */
let corp: SsoSetup;
let corpSlug: string;
/** Another organization, with its own IdP. */
let rival: SsoSetup;
/** An organization whose only connection is disabled (its domain verified). */
let dormant: SsoSetup;
let config: client.Configuration;

const UNROUTABLE = 'organization does not sign in through an identity provider';

/** An organization with an enabled OpenID connection to the upstream fake at OPENID_ISSUER. */
let openOrg: { id: string; slug: string; connectionId: string; domain: string };
let upstream: Upstream;
const OPENID_ISSUER = 'https://idp.open.example';
const hosts: Record<string, string> = {};

beforeAll(async () => {
  f = await oidcFixture({}, false, hostMappingFetch(hosts));
  idp = await TestIdp.create(f.t.clock.now(), 'corp-idp');
  other = await TestIdp.create(f.t.clock.now(), 'rival-idp');
  corp = await setUp(f.t, idp);
  rival = await setUp(f.t, other);
  dormant = await setUp(f.t, await TestIdp.create(f.t.clock.now(), 'dormant-idp'));
  const off = await adminCall(
    f.t,
    'PATCH',
    `/organizations/${dormant.orgId}/connections/${dormant.connectionId}`,
    {
      enabled: false,
    },
  );
  expect(off.statusCode, off.body).toBe(200);
  const org = await call(f.t.app, 'GET', `${ORGS}/${corp.orgId}`, corp.ownerToken);
  expect(org.statusCode, org.body).toBe(200);
  corpSlug = org.json().data.slug;
  config = await rpConfig(f, FIRST_PARTY);
  // The OpenID connection: the SAML setup's organization shape, with an OpenID IdP instead.
  const openSetup = await setUp(f.t, await TestIdp.create(f.t.clock.now(), 'unused-idp'));
  const openOwner = openSetup.ownerToken;
  await adminCall(f.t, 'PATCH', `/organizations/${openSetup.orgId}/connections/${openSetup.connectionId}`, {
    enabled: false,
  });
  const secret = `open-secret-${'o'.repeat(32)}`;
  const made = await call(f.t.app, 'POST', `${ORGS}/${openSetup.orgId}/connections`, openOwner, {
    type: 'oidc',
    name: 'Open OpenID',
    enabled: true,
    oidc: { issuer: OPENID_ISSUER, clientId: 'open-client', clientSecret: secret },
  });
  expect(made.statusCode, made.body).toBe(201);
  const slug = (await call(f.t.app, 'GET', `${ORGS}/${openSetup.orgId}`, openOwner)).json().data.slug;
  openOrg = { id: openSetup.orgId, slug, connectionId: made.json().data.id, domain: openSetup.domain };
  upstream = await startUpstream({
    issuer: OPENID_ISSUER,
    clientId: 'open-client',
    clientSecret: secret,
    redirectUris: [`${f.origin}/api/v1/sso/oidc/${openOrg.connectionId}/callback`],
  });
  hosts[new URL(OPENID_ISSUER).host] = upstream.origin;
}, 60_000);

afterAll(async () => {
  await f?.close();
  await upstream?.close();
});

const address = (s: SsoSetup) => `p-${randomBytes(4).toString('hex')}@${s.domain}`;

/** Where the browser went from the authorization request: the IdP, the hosted page or the app. */
async function open(jar: CookieJar, params: Record<string, string>) {
  const auth = await startAuthorization(f, config, params);
  const landed = await browse(f, auth.url.href, jar);
  return { auth, landed };
}

/** The AuthnRequest an IdP was sent: its ID and which IdP. */
function authnRequestAt(url: URL | undefined) {
  expect(url, 'went to an IdP').toBeDefined();
  const request = (url as URL).searchParams.get('SAMLRequest') ?? '';
  const xml = inflateRawSync(Buffer.from(request, 'base64')).toString('utf8');
  return { host: (url as URL).host, requestId: parse(xml).documentElement?.getAttribute('ID') ?? '' };
}

/**
 * The IdP signs `email` in and posts its answer to our ACS; the page of the application's sign-in
 * exchanges the handoff (with the flow's cookie), hands the session to the cookie, and hands the
 * window back to the provider. Answers where the provider sent the browser then.
 */
async function answerAtIdp(
  jar: CookieJar,
  s: SsoSetup,
  signer: TestIdp,
  idpUrl: URL | undefined,
  email: string,
) {
  const { requestId } = authnRequestAt(idpUrl);
  const acs = await fetch(s.acsUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() },
    body: new URLSearchParams({ SAMLResponse: signer.response(good(s, { requestId }, f.t, email)) }),
  });
  return backOnPage(jar, acs);
}

/** What the application's sign-in page does with the IdP's answer (the ACS's or callback's 303). */
async function backOnPage(jar: CookieJar, answer: Response) {
  jar.take(answer);
  expect(answer.status).toBe(303);
  const back = new URL(String(answer.headers.get('location')));
  const [route, query] = back.hash.split('?');
  const uid = /^#\/authorize\/([\w-]+)$/.exec(route)?.[1];
  expect(uid, back.href).toBeTruthy();
  const code = new URLSearchParams(query).get('handoff');
  expect(code, back.href).toBeTruthy();
  const exchanged = await fetch(`${f.origin}/api/v1/sso-handoffs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.origin, cookie: jar.header() },
    body: JSON.stringify({ code }),
  });
  expect(exchanged.status).toBe(201);
  jar.take(exchanged);
  const grant = ((await exchanged.json()) as { data: { refreshToken: string } }).data;
  const handed = await fetch(`${f.origin}/api/v1/browser-session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.origin, cookie: jar.header() },
    body: JSON.stringify({ refreshToken: grant.refreshToken }),
  });
  expect(handed.status).toBe(201);
  jar.take(handed);
  return browse(f, `/oidc/interaction/${uid}/continue`, jar);
}

async function tokensOf(auth: Awaited<ReturnType<typeof startAuthorization>>, callback: URL | undefined) {
  expect(callback?.searchParams.get('code'), callback?.href).toBeTruthy();
  return client.authorizationCodeGrant(config, callback as URL, {
    pkceCodeVerifier: auth.verifier,
    expectedState: auth.state,
    expectedNonce: auth.nonce,
  });
}

const IDP_HOST = (signer: TestIdp) => new URL(signer.ssoUrl).host;
const hostedPage = /^http:\/\/127\.0\.0\.1:\d+\/account\/#\/authorize\/[\w-]+$/;

/** The interaction's details, as the hosted page reads them. */
async function details(jar: CookieJar, location: string | undefined) {
  const uid = /#\/authorize\/([\w-]+)$/.exec(location ?? '')?.[1];
  const res = await fetch(`${f.origin}/oidc/interaction/${uid}/details`, {
    headers: { cookie: jar.header() },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { loginHint: string | null; freshSignIn: boolean };
}

describe('login_hint', () => {
  it('of a verified domain goes straight to its IdP, and the ID token names the connection', async () => {
    const jar = new CookieJar();
    const email = address(corp);
    const { auth, landed } = await open(jar, { login_hint: email });
    expect(landed.page).toBeUndefined();
    expect(landed.callback?.host).toBe(IDP_HOST(idp));
    const done = await answerAtIdp(jar, corp, idp, landed.callback, email);
    expect(done.page).toBeUndefined();
    const claims = (await tokensOf(auth, done.callback)).claims();
    expect(claims?.amr).toEqual(['fed', `sso:${corp.connectionId}`]);
    const made = await f.t.ctx.database.db
      .selectFrom('identifiers')
      .select('identity_id')
      .where('value', '=', email)
      .executeTakeFirstOrThrow();
    expect(claims?.sub).toBe(made.identity_id);
  });

  it('of an unverified or unknown domain opens the hosted sign-in with the identifier, the same for both', async () => {
    // A domain claimed but never verified, by an organization with an enabled connection.
    const claimed = `pending-${randomBytes(4).toString('hex')}.example`;
    const res = await call(f.t.app, 'POST', `${ORGS}/${corp.orgId}/domains`, corp.ownerToken, {
      domain: claimed,
    });
    expect(res.statusCode, res.body).toBe(201);
    const seen = [];
    for (const hint of [`someone@${claimed}`, `someone@nowhere-${randomBytes(4).toString('hex')}.example`]) {
      const jar = new CookieJar();
      const { landed } = await open(jar, { login_hint: hint });
      expect(landed.callback).toBeUndefined();
      expect(landed.page?.location).toMatch(hostedPage);
      const described = await details(jar, landed.page?.location);
      expect(described.loginHint).toBe(hint);
      seen.push({
        status: landed.page?.status,
        freshSignIn: described.freshSignIn,
        cookies: [...jar.cookies.keys()],
      });
    }
    expect(seen[0]).toEqual(seen[1]);
  });

  it('of a domain whose only connection is disabled is not routed', async () => {
    const jar = new CookieJar();
    const { landed } = await open(jar, { login_hint: address(dormant) });
    expect(landed.callback).toBeUndefined();
    expect(landed.page?.location).toMatch(hostedPage);
  });

  it('does not override a session the browser holds (only a sign-in is routed)', async () => {
    const { person, jar } = await hostedSignIn(f);
    const { auth, landed } = await open(jar, { login_hint: address(corp) });
    const claims = (await tokensOf(auth, landed.callback)).claims();
    expect(claims?.sub).toBe(person.identityId);
    expect(claims?.amr).toEqual(['pwd']);
  });
});

describe('organization', () => {
  it('by id goes to its IdP', async () => {
    const jar = new CookieJar();
    const { landed } = await open(jar, { organization: corp.orgId });
    expect(authnRequestAt(landed.callback).host).toBe(IDP_HOST(idp));
  });

  it('by slug goes to its IdP, and the code exchange yields the connection in amr', async () => {
    const jar = new CookieJar();
    const email = address(corp);
    const { auth, landed } = await open(jar, { organization: corpSlug });
    expect(landed.callback?.host).toBe(IDP_HOST(idp));
    const done = await answerAtIdp(jar, corp, idp, landed.callback, email);
    const claims = (await tokensOf(auth, done.callback)).claims();
    expect(claims?.amr).toEqual(['fed', `sso:${corp.connectionId}`]);
  });

  it('of an organization with an OpenID connection goes to that IdP (the oldest enabled connection)', async () => {
    const jar = new CookieJar();
    const email = `p-${randomBytes(4).toString('hex')}@${openOrg.domain}`;
    const { auth, landed } = await open(jar, { organization: openOrg.slug });
    expect(landed.callback?.origin).toBe(OPENID_ISSUER);
    upstream.setAccount(`open-${randomBytes(4).toString('hex')}`, { email, email_verified: true });
    const arrival = await followToCallback(landed.callback as URL, {
      callback: `${f.origin}/api/v1/sso/oidc/${openOrg.connectionId}/callback`,
      fetch: hostMappingFetch(hosts),
    });
    const callback = await fetch(arrival.url, { redirect: 'manual', headers: { cookie: jar.header() } });
    const done = await backOnPage(jar, callback);
    const claims = (await tokensOf(auth, done.callback)).claims();
    expect(claims?.amr).toEqual(['fed', `sso:${openOrg.connectionId}`]);
  });

  it('unknown, disabled-connection or connection-less: one invalid_request to the application', async () => {
    const bare = await call(f.t.app, 'POST', ORGS, corp.ownerToken, {
      name: 'Bare',
      slug: `bare-${randomBytes(4).toString('hex')}`,
    });
    expect(bare.statusCode, bare.body).toBe(201);
    const answers = [];
    for (const organization of [
      'no-such-organization',
      '00000000-0000-4000-8000-000000000000',
      dormant.orgId,
      bare.json().data.id,
    ]) {
      const jar = new CookieJar();
      const { auth, landed } = await open(jar, { organization });
      expect(landed.callback?.origin).toBe(new URL(f.redirectUri).origin);
      const params = landed.callback?.searchParams;
      expect(params?.get('state')).toBe(auth.state);
      answers.push({ error: params?.get('error'), description: params?.get('error_description') });
    }
    expect(answers).toEqual(Array(4).fill({ error: 'invalid_request', description: UNROUTABLE }));
  });

  it('is not answered by a password session: the person goes to the IdP (and without it, the session answers)', async () => {
    const email = address(corp);
    const person = await createPerson(f.t.ctx, email);
    const { jar } = await hostedSignIn(f, person);
    // Control: the session answers an unrouted request at once.
    const plain = await open(jar, {});
    expect((await tokensOf(plain.auth, plain.landed.callback)).claims()?.amr).toEqual(['pwd']);
    // The provider now holds a session (password) for this browser: it does not answer this one.
    const { auth, landed } = await open(jar, { organization: corp.orgId });
    expect(landed.callback?.host).toBe(IDP_HOST(idp));
    const done = await answerAtIdp(jar, corp, idp, landed.callback, email);
    const claims = (await tokensOf(auth, done.callback)).claims();
    expect(claims?.sub).toBe(person.identityId);
    expect(claims?.amr).toEqual(['fed', `sso:${corp.connectionId}`]);
  });

  it('the hosted page asks for a sign-in, not for the session the browser holds, when the IdP answers', async () => {
    const { jar } = await hostedSignIn(f);
    const { landed } = await open(jar, { organization: corp.orgId });
    const { requestId } = authnRequestAt(landed.callback);
    const acs = await fetch(corp.acsUrl, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() },
      body: new URLSearchParams({
        SAMLResponse: idp.response(good(corp, { requestId }, f.t, address(corp))),
      }),
    });
    const back = String(acs.headers.get('location'));
    expect(back).toMatch(/#\/authorize\/[\w-]+\?handoff=/);
    // The browser still holds its password session: the page must exchange the handoff, not hand
    // the window back at once (which would go to the IdP again).
    expect((await details(jar, back.split('?')[0])).freshSignIn).toBe(true);
    // Without the organization, the same session is handed back at once.
    const unrouted = await open(jar, { login_hint: 'someone@elsewhere.example' });
    expect(unrouted.landed.callback?.searchParams.get('code')).toBeTruthy();
  });

  it('is not answered by a session through another organization’s IdP, and is by its own', async () => {
    const jar = new CookieJar();
    const email = address(rival);
    const first = await open(jar, { organization: rival.orgId });
    expect(first.landed.callback?.host).toBe(IDP_HOST(other));
    const signedIn = await answerAtIdp(jar, rival, other, first.landed.callback, email);
    expect((await tokensOf(first.auth, signedIn.callback)).claims()?.amr).toEqual([
      'fed',
      `sso:${rival.connectionId}`,
    ]);
    // Its own organization again: the session answers without the IdP.
    const again = await open(jar, { organization: rival.orgId });
    expect((await tokensOf(again.auth, again.landed.callback)).claims()?.amr).toEqual([
      'fed',
      `sso:${rival.connectionId}`,
    ]);
    // Another organization: to that one's IdP.
    const elsewhere = await open(jar, { organization: corp.orgId });
    expect(elsewhere.landed.callback?.host).toBe(IDP_HOST(idp));
  });
});

describe('prompt=none', () => {
  it('with a routed request and no session that answers it: login_required', async () => {
    const outcomes = [];
    // No session at all; a password session (hosted only, then also the provider's).
    const bare = new CookieJar();
    outcomes.push((await open(bare, { organization: corp.orgId, prompt: 'none' })).landed.callback);
    const { jar } = await hostedSignIn(f);
    outcomes.push((await open(jar, { organization: corp.orgId, prompt: 'none' })).landed.callback);
    const plain = await open(jar, {});
    await tokensOf(plain.auth, plain.landed.callback);
    outcomes.push((await open(jar, { organization: corp.orgId, prompt: 'none' })).landed.callback);
    for (const callback of outcomes) {
      expect(callback?.origin).toBe(new URL(f.redirectUri).origin);
      expect(callback?.searchParams.get('error')).toBe('login_required');
    }
  });

  it('with a session through the organization’s IdP: answered', async () => {
    const jar = new CookieJar();
    const first = await open(jar, { organization: corp.orgId });
    const signedIn = await answerAtIdp(jar, corp, idp, first.landed.callback, address(corp));
    await tokensOf(first.auth, signedIn.callback);
    const silent = await open(jar, { organization: corpSlug, prompt: 'none' });
    expect((await tokensOf(silent.auth, silent.landed.callback)).claims()?.amr).toEqual([
      'fed',
      `sso:${corp.connectionId}`,
    ]);
  });
});
