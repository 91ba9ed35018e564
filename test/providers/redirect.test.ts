import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { bearer, createPerson, type Grant, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { followToCallback, hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { completeSignIn, DEFAULT_POLICY, enrolVerified, totp } from '../second-factors/helpers.js';
import {
  appEnv,
  atUpstream,
  Browser,
  CLIENT_ID,
  callbackOf,
  count,
  deliver,
  exchange,
  expectError,
  FLOW_COOKIE,
  FLOWS,
  footprint,
  handoffOf,
  identifiersOf,
  identityOf,
  linkedTo,
  ORIGIN,
  redirectEntry,
  returned,
  SIGN_IN_PAGE,
  SIGN_UP_PAGE,
  setCookies,
  signInThrough,
  startFlow,
  tokenRequests,
  trip,
  upstreamClient,
} from './redirect-support.js';
import { SIGN_IN_REFUSED } from './support.js';

/*
 * Issue 26, "Continue with …" through the routes against a real oidc-provider upstream on its own
 * loopback issuer (no preset): the start, the callback, the handoff, and every refusal of the flow
 * itself. The linking rules are in redirect-linking.test.ts, the presets in redirect-presets.test.ts.
 */

let t: TestApp;
let acme: Upstream;
/** Closed in its test: the provider goes down between the authorization and the callback. */
let down: Upstream;
let nowherePort: number;
// Loopback goes as it is; any other host is refused, so no test reaches the network.
const outbound = hostMappingFetch({});

beforeAll(async () => {
  acme = await startUpstream({ ...upstreamClient('acme') });
  down = await startUpstream({ ...upstreamClient('down') });
  nowherePort = await freePort();
  t = await createTestApp({
    upstreamFetch: outbound,
    env: appEnv([
      redirectEntry('acme', { displayName: 'Acme', issuer: acme.issuer }),
      redirectEntry('down', { issuer: down.issuer }),
      redirectEntry('nowhere', { issuer: `http://127.0.0.1:${nowherePort}` }),
      // The ID-token path only: not offered for redirect sign-in.
      {
        name: 'tokens',
        issuer: 'https://tokens.example.test',
        audience: 'svc',
        jwksUri: 'https://tokens.example.test/jwks',
      },
    ]),
  });
});

afterAll(async () => {
  await t?.close();
  await acme?.close();
  await down?.close();
});

/** A new account at the upstream, signed in by its next authorization. */
function account(claims: Record<string, unknown>, up: Upstream = acme): string {
  const sub = `sub-${randomUUID()}`;
  up.setAccount(sub, claims);
  up.login = sub;
  return sub;
}

const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.com`;
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

async function flowRow(state: string) {
  const r = await sql<{ consumed: boolean; provider: string; binding_hash: string; sealed_checks: string }>`
    SELECT consumed_at IS NOT NULL AS consumed, provider, binding_hash, sealed_checks FROM provider_flows
    WHERE state_hash = ${sha256(state)}`.execute(t.ctx.database.db);
  return r.rows[0];
}

const flowCount = async () =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM provider_flows`.execute(t.ctx.database.db)).rows[0]
    .n;

/** The flow cookie's clearing line: same name, empty, Max-Age=0. */
function expectCleared(res: LightMyRequestResponse, browser: Browser) {
  const lines = setCookies(res);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(
    /^__Host-identity-provider-flow-[0-9a-f]{16}=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax; Secure$/,
  );
  expect(browser.names).toEqual([]);
}

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect({ status: res.statusCode, code: res.json().code }, res.body).toEqual({ status, code });
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
}

async function history(accessToken: string): Promise<string[]> {
  const res = await t.app.inject({
    method: 'GET',
    url: '/api/v1/sign-ins/history',
    headers: bearer(accessToken),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.map((e: { method: string }) => e.method);
}

describe('GET /providers', () => {
  it('lists the providers offering redirect sign-in, in configuration order, and not the ID-token-only one', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/providers' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      data: [
        { name: 'acme', displayName: 'Acme', preset: null },
        { name: 'down', displayName: 'down', preset: null },
        { name: 'nowhere', displayName: 'nowhere', preset: null },
      ],
    });
  });
});

describe('POST /provider-flows', () => {
  it('answers the authorization URL (PKCE S256, state, nonce) and a __Host- cookie binding the flow for ten minutes', async () => {
    const browser = new Browser();
    const res = await startFlow(t, browser, { provider: 'acme' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const { data } = res.json();
    expect(Object.keys(data).sort()).toEqual(['authorizationUrl', 'expiresAt']);
    expect(data.expiresAt).toBe(new Date(t.clock.now().getTime() + 600_000).toISOString());
    const url = new URL(data.authorizationUrl);
    expect(url.origin).toBe(acme.origin);
    const q = url.searchParams;
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe(CLIENT_ID);
    expect(q.get('redirect_uri')).toBe(callbackOf('acme'));
    expect(q.get('scope')).toBe('openid email profile');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const lines = setCookies(res);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^__Host-identity-provider-flow-[0-9a-f]{16}=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/,
    );
    expect(browser.names).toHaveLength(1);
    expect(browser.names[0]).toMatch(FLOW_COOKIE);

    // Stored by the state's hash; the cookie only by its hash; the nonce and verifier sealed.
    const state = q.get('state') as string;
    const row = await flowRow(state);
    expect(row).toMatchObject({ consumed: false, provider: 'acme' });
    const binding = (browser.header() as string).split('=')[1];
    expect(row.binding_hash).toBe(sha256(binding));
    expect(row.sealed_checks).not.toContain(q.get('nonce'));
    expect(row.sealed_checks).not.toContain(state);
  });

  it('refuses another Origin (or a cross-site fetch) with 403 identity.cross_site_refused, setting no cookie', async () => {
    const before = await flowCount();
    const body = { provider: 'acme', intent: 'sign_in', returnTo: SIGN_IN_PAGE };
    const causes: Record<string, Record<string, string>> = {
      'another origin': { origin: 'https://evil.example' },
      'the origin with another port': { origin: 'http://127.0.0.1:4001' },
      'no origin': {},
      'cross-site fetch': { origin: ORIGIN, 'sec-fetch-site': 'cross-site' },
    };
    const bodies = new Set<string>();
    for (const [cause, headers] of Object.entries(causes)) {
      const res = await t.app.inject({ method: 'POST', url: FLOWS, headers, payload: body });
      expectProblem(res, 403, 'identity.cross_site_refused');
      expect(setCookies(res), cause).toEqual([]);
      bodies.add(res.body);
    }
    expect(bodies.size).toBe(1);
    expect(await flowCount()).toBe(before);
    // The same request from the service's own page is taken.
    const ok = await t.app.inject({
      method: 'POST',
      url: FLOWS,
      headers: { origin: ORIGIN, 'sec-fetch-site': 'same-origin' },
      payload: body,
    });
    expect(ok.statusCode, ok.body).toBe(201);
  });

  it('refuses a return address outside the allow-list with 400 validation.failed', async () => {
    const before = await flowCount();
    const refused = [
      'https://evil.example/account/#/sign-in',
      '//evil.example/account/#/sign-in',
      `${ORIGIN}/account/#/sign-in`,
      '/account/#/sign-in?next=https://evil.example',
      '/account/#/settings',
      '/account/#/authorize/',
      '/account/#/authorize/a/../../x',
      `/account/#/authorize/${'a'.repeat(129)}`,
      '/account/sign-in',
      '/elsewhere/#/sign-in',
    ];
    for (const returnTo of refused) {
      const browser = new Browser();
      const res = await startFlow(t, browser, { provider: 'acme', returnTo });
      expect(res.statusCode, returnTo).toBe(400);
      expect(res.json().code, returnTo).toBe('validation.failed');
      expect(browser.names, returnTo).toEqual([]);
    }
    expect(await flowCount()).toBe(before);
    for (const returnTo of [
      SIGN_IN_PAGE,
      SIGN_UP_PAGE,
      '/account/#/security',
      '/account/#/authorize/Ab_9-x',
    ]) {
      const res = await startFlow(t, new Browser(), { provider: 'acme', returnTo });
      expect(res.statusCode, `${returnTo}: ${res.body}`).toBe(201);
    }
  });

  it('answers 422 identity.provider_unavailable for an unknown provider or one without redirect sign-in', async () => {
    for (const provider of ['nobody', 'tokens']) {
      const browser = new Browser();
      const res = await startFlow(t, browser, { provider });
      expectProblem(res, 422, 'identity.provider_unavailable');
      expect(browser.names).toEqual([]);
    }
  });

  it('answers 503 service.unavailable when the provider cannot be discovered', async () => {
    const browser = new Browser();
    const res = await startFlow(t, browser, { provider: 'nowhere' });
    expectProblem(res, 503, 'service.unavailable');
    expect(browser.names).toEqual([]);
  });

  it('starts a link only with a session (401) and an elevation (403)', async () => {
    const before = await flowCount();
    const body = { provider: 'acme', intent: 'link' as const, returnTo: '/account/#/security' };
    expectProblem(await startFlow(t, new Browser(), body), 401, 'identity.session_required');
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    expectProblem(
      await startFlow(t, new Browser(), body, bearer(grant.accessToken)),
      403,
      'identity.elevation_required',
    );
    expect(await flowCount()).toBe(before);
  });
});

describe('sign-up and sign-in through a generic provider', () => {
  const address = email('ann');
  let sub: string;
  let identityId: string;
  let grant: Grant;

  it('signs a new subject up: an identity holding the upstream email verified, and a session from the handoff', async () => {
    sub = account({ email: address, email_verified: true, name: 'Ann' });
    const identities = await count(t, 'identities');
    const done = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    expect(done.back.page).toBe(SIGN_UP_PAGE);
    expect(done.callback.headers['cache-control']).toBe('no-store');
    expect(done.callback.headers['referrer-policy']).toBe('no-referrer');
    // The flow's cookie stays until the handoff: only this browser can exchange it.
    expect(setCookies(done.callback)).toEqual([]);
    const code = handoffOf(done);
    const res = await exchange(t, code, done.browser);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    grant = res.json().data as Grant;
    expect(grant.kind).toBe('session');
    expect(typeof grant.refreshToken).toBe('string');
    expectCleared(res, done.browser);

    expect(await count(t, 'identities')).toBe(identities + 1);
    identityId = await identityOf(t, grant.accessToken);
    expect(await linkedTo(t, 'acme', sub)).toEqual([identityId]);
    expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
    const context = (
      await t.app.inject({
        method: 'GET',
        url: '/api/v1/session/context',
        headers: bearer(grant.accessToken),
      })
    ).json().data;
    expect(context.identifiers).toHaveLength(1);
    expect(context.identifiers[0]).toMatchObject({ type: 'email', value: `${address[0]}***@example.com` });
    const methods = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-in-methods',
      headers: bearer(grant.accessToken),
    });
    expect(
      methods
        .json()
        .data.map((m: { kind: string; display: string }) => `${m.kind}:${m.display}`)
        .sort(),
    ).toEqual([`email:${address[0]}***@example.com`, 'provider:acme']);
    expect(await auditCount(t, 'identity.provider.registered', identityId)).toBe(1);
    expect(await history(grant.accessToken)).toEqual(['provider']);
    // Neither the handoff code nor the upstream's code is ever logged.
    const upstreamCode = new URL(done.arrival.url).searchParams.get('code') as string;
    expect(t.logs()).not.toContain(code);
    expect(t.logs()).not.toContain(upstreamCode);
  });

  it('signs the same identity in for the same subject, and the history says provider', async () => {
    acme.login = sub;
    const identities = await count(t, 'identities');
    const { res } = await signInThrough(t, 'acme');
    expect(res.statusCode, res.body).toBe(201);
    const again = res.json().data as Grant;
    expect(again.kind).toBe('session');
    expect(await identityOf(t, again.accessToken)).toBe(identityId);
    expect(await count(t, 'identities')).toBe(identities);
    expect(await linkedTo(t, 'acme', sub)).toEqual([identityId]);
    expect(await auditCount(t, 'identity.provider.registered', identityId)).toBe(1);
    expect(await history(again.accessToken)).toEqual(['provider', 'provider']);
  });

  it('asks an identity holding an authenticator for the second factor, then completes the sign-in', async () => {
    const factor = await enrolVerified(
      t,
      { identityId, email: address, password: '' },
      grant,
      DEFAULT_POLICY,
    );
    acme.login = sub;
    const sessions = await count(t, 'sessions');
    const { res } = await signInThrough(t, 'acme');
    expect(res.statusCode, res.body).toBe(201);
    const ticket = res.json().data;
    expect(Object.keys(ticket).sort()).toEqual(['kind', 'secondFactorTicket', 'ticketExpiresAt']);
    expect(ticket.kind).toBe('second_factor_required');
    // No session before the second step.
    expect(await count(t, 'sessions')).toBe(sessions);
    const done = await completeSignIn(t.app, {
      secondFactorTicket: ticket.secondFactorTicket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(done.statusCode, done.body).toBe(201);
    const session = done.json().data as Grant;
    expect(session.kind).toBe('session');
    expect(await identityOf(t, session.accessToken)).toBe(identityId);
    // The provider's sign-ins, then the second step that completed this one (as for a password).
    expect(await history(session.accessToken)).toEqual(['second_factor', 'provider', 'provider']);
  });
});

describe('refusals of the flow', () => {
  it('state mismatch: a callback with another state finds no flow; nothing is exchanged or made', async () => {
    account({ email: email('state'), email_verified: true });
    const browser = new Browser();
    const started = await startFlow(t, browser, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    const arrival = await atUpstream(started, 'acme');
    if (arrival.method !== 'GET') throw new Error('expected a query response');
    const state = new URL(arrival.url).searchParams.get('state') as string;
    const before = await footprint(t);
    const tokens = tokenRequests(acme.requests);

    const tampered = new URL(arrival.url);
    tampered.searchParams.set('state', randomBytes(32).toString('base64url'));
    const res = await deliver(t, { method: 'GET', url: tampered.href }, browser);
    // No flow: back to the sign-in page, whatever page the real flow started from.
    expectError(res, 'acme', 'refused', SIGN_IN_PAGE);
    const missing = new URL(arrival.url);
    missing.searchParams.delete('state');
    expectError(
      await deliver(t, { method: 'GET', url: missing.href }, browser),
      'acme',
      'refused',
      SIGN_IN_PAGE,
    );

    expect(await footprint(t)).toEqual(before);
    expect(tokenRequests(acme.requests)).toBe(tokens);
    expect((await flowRow(state)).consumed).toBe(false);
  });

  it('nonce mismatch: an ID token carrying another nonce is refused after the exchange', async () => {
    account({ email: email('nonce'), email_verified: true });
    const browser = new Browser();
    const started = await startFlow(t, browser, { provider: 'acme' });
    const url = new URL(started.json().data.authorizationUrl);
    const nonce = url.searchParams.get('nonce');
    // The upstream is asked for another nonce than the flow sealed, so its ID token carries that one.
    const other = randomBytes(32).toString('base64url');
    url.searchParams.set('nonce', other);
    const arrival = await followToCallback(url, { callback: callbackOf('acme') });
    const before = await footprint(t);
    const tokens = tokenRequests(acme.requests);
    const res = await deliver(t, arrival, browser);
    expectError(res, 'acme', 'refused');
    expectCleared(res, browser);
    // The code was exchanged: the refusal is the ID token's nonce, not an earlier check.
    expect(tokenRequests(acme.requests)).toBe(tokens + 1);
    expect(nonce).not.toBe(other);
    expect(await footprint(t)).toEqual(before);
  });

  it('a code issued to another authorization (its PKCE challenge) is refused under this flow’s state', async () => {
    account({ email: email('pkce'), email_verified: true });
    const browser = new Browser();
    const first = await atUpstream(await startFlow(t, browser, { provider: 'acme' }), 'acme');
    const second = await atUpstream(await startFlow(t, browser, { provider: 'acme' }), 'acme');
    const injected = new URL(first.url);
    injected.searchParams.set('code', new URL(second.url).searchParams.get('code') as string);
    const before = await footprint(t);
    const res = await deliver(t, { method: 'GET', url: injected.href }, browser);
    expectError(res, 'acme', 'refused');
    expect(await footprint(t)).toEqual(before);
  });

  it('replayed callback: the second delivery finds the flow consumed, and makes no second handoff', async () => {
    account({ email: email('replay'), email_verified: true });
    const done = await trip(t, { provider: 'acme' });
    handoffOf(done);
    const before = await footprint(t);
    const tokens = tokenRequests(acme.requests);
    const again = await deliver(t, done.arrival, done.browser);
    expectError(again, 'acme', 'refused');
    expect(await footprint(t)).toEqual(before);
    // The code is not sent upstream a second time.
    expect(tokenRequests(acme.requests)).toBe(tokens);
  });

  it('expired flow: a callback ten minutes after the start is refused before any exchange', async () => {
    account({ email: email('late'), email_verified: true });
    // Just inside the ten minutes: taken.
    const browser = new Browser();
    const inTime = await atUpstream(await startFlow(t, browser, { provider: 'acme' }), 'acme');
    t.clock.advance(599);
    const ok = await deliver(t, inTime, browser);
    expect(returned(ok).params.has('handoff')).toBe(true);

    const late = new Browser();
    const arrival = await atUpstream(
      await startFlow(t, late, { provider: 'acme', returnTo: SIGN_UP_PAGE }),
      'acme',
    );
    t.clock.advance(601);
    const before = await footprint(t);
    const tokens = tokenRequests(acme.requests);
    const res = await deliver(t, arrival, late);
    expectError(res, 'acme', 'refused', SIGN_UP_PAGE);
    expectCleared(res, late);
    expect(tokenRequests(acme.requests)).toBe(tokens);
    expect(await footprint(t)).toEqual(before);
  });

  it('a callback from another browser (no flow cookie, another flow’s cookie, a forged one) is refused', async () => {
    account({ email: email('elsewhere'), email_verified: true });
    const before = await footprint(t);
    const tokens = tokenRequests(acme.requests);

    const victim = new Browser();
    const noCookie = await atUpstream(await startFlow(t, victim, { provider: 'acme' }), 'acme');
    expectError(await deliver(t, noCookie), 'acme', 'refused');
    // The flow was burned by the attempt: the browser that started it is refused too.
    expectError(await deliver(t, noCookie, victim), 'acme', 'refused');

    const attacker = new Browser();
    await startFlow(t, attacker, { provider: 'acme' });
    const someoneElse = new Browser();
    const theirs = await atUpstream(await startFlow(t, someoneElse, { provider: 'acme' }), 'acme');
    expectError(await deliver(t, theirs, attacker), 'acme', 'refused');

    const forger = new Browser();
    const forged = await atUpstream(await startFlow(t, forger, { provider: 'acme' }), 'acme');
    const name = forger.names[0];
    expectError(
      await deliver(t, forged, `${name}=${randomBytes(32).toString('base64url')}`),
      'acme',
      'refused',
    );

    expect(tokenRequests(acme.requests)).toBe(tokens);
    expect(await footprint(t)).toEqual(before);
  });

  it('a handoff exchanged without the flow cookie is the identical 401 of a wrong code', async () => {
    account({ email: email('handoff'), email_verified: true });
    const sessions = await count(t, 'sessions');
    const wrong = await exchange(t, randomBytes(32).toString('base64url'));
    const a = await trip(t, { provider: 'acme' });
    const withoutCookie = await exchange(t, handoffOf(a));
    const b = await trip(t, { provider: 'acme' });
    const otherBrowser = new Browser();
    await startFlow(t, otherBrowser, { provider: 'acme' });
    const withAnotherCookie = await exchange(t, handoffOf(b), otherBrowser);
    for (const res of [wrong, withoutCookie, withAnotherCookie]) {
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json()).toEqual(SIGN_IN_REFUSED);
      expect(res.body).toBe(wrong.body);
      expect(res.headers['content-type']).toBe(wrong.headers['content-type']);
    }
    // A code presented without its cookie is spent: the rightful browser cannot use it after that.
    expect((await exchange(t, handoffOf(a), a.browser)).body).toBe(wrong.body);
    expect(await count(t, 'sessions')).toBe(sessions);
  });

  it('a handoff from another Origin is refused before the code is looked at', async () => {
    account({ email: email('handoff-origin'), email_verified: true });
    const done = await trip(t, { provider: 'acme' });
    const code = handoffOf(done);
    const cross = await exchange(t, code, done.browser, { origin: 'https://evil.example' });
    expectProblem(cross, 403, 'identity.cross_site_refused');
    expect((await exchange(t, code, done.browser)).statusCode).toBe(201);
  });

  it('a replayed handoff is refused with the same 401, and opens no second session', async () => {
    account({ email: email('handoff-replay'), email_verified: true });
    const done = await trip(t, { provider: 'acme' });
    const code = handoffOf(done);
    const cookie = done.browser.header() as string;
    expect((await exchange(t, code, cookie)).statusCode).toBe(201);
    const sessions = await count(t, 'sessions');
    const again = await exchange(t, code, cookie);
    expect(again.statusCode).toBe(401);
    expect(again.json()).toEqual(SIGN_IN_REFUSED);
    expect(await count(t, 'sessions')).toBe(sessions);
  });

  it('a handoff lives two minutes', async () => {
    account({ email: email('handoff-expiry'), email_verified: true });
    const inTime = await trip(t, { provider: 'acme' });
    t.clock.advance(119);
    expect((await exchange(t, handoffOf(inTime), inTime.browser)).statusCode).toBe(201);

    const late = await trip(t, { provider: 'acme' });
    t.clock.advance(121);
    const sessions = await count(t, 'sessions');
    const res = await exchange(t, handoffOf(late), late.browser);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(SIGN_IN_REFUSED);
    expect(await count(t, 'sessions')).toBe(sessions);
  });

  it('the person declining at the provider comes back cancelled', async () => {
    account({ email: email('declined'), email_verified: true });
    acme.deny = true;
    const before = await footprint(t);
    const done = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    expect(new URL(done.arrival.url).searchParams.get('error')).toBe('access_denied');
    expectError(done.callback, 'acme', 'cancelled', SIGN_UP_PAGE);
    expectCleared(done.callback, done.browser);
    expect(await footprint(t)).toEqual(before);
  });

  it('a provider down between the authorization and the callback comes back unavailable', async () => {
    down.setAccount('someone', { email: email('down'), email_verified: true });
    down.login = 'someone';
    const browser = new Browser();
    const arrival = await atUpstream(await startFlow(t, browser, { provider: 'down' }), 'down');
    await down.close();
    const before = await footprint(t);
    const res = await deliver(t, arrival, browser);
    expectError(res, 'down', 'unavailable');
    expectCleared(res, browser);
    expect(await footprint(t)).toEqual(before);
  });

  it('a callback at another provider’s address than the flow’s is refused', async () => {
    account({ email: email('crossed'), email_verified: true });
    const browser = new Browser();
    const arrival = await atUpstream(await startFlow(t, browser, { provider: 'acme' }), 'acme');
    const elsewhere = arrival.url.replace('/providers/acme/', '/providers/down/');
    const before = await footprint(t);
    expectError(await deliver(t, { method: 'GET', url: elsewhere }, browser), 'down', 'refused');
    expect(await footprint(t)).toEqual(before);
  });
});
