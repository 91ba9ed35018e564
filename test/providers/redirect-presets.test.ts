import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Grant } from '../helpers/identities.js';
import {
  type GitHubFake,
  hostMappingFetch,
  startGitHub,
  startUpstream,
  type Upstream,
} from '../helpers/upstream.js';
import {
  appEnv,
  atUpstream,
  Browser,
  CLIENT_ID,
  CLIENT_SECRET,
  callbackOf,
  deliver,
  exchange,
  expectError,
  footprint,
  identifiersOf,
  identityOf,
  linkedTo,
  linksOf,
  namesOf,
  redirectEntry,
  returned,
  setCookies,
  signInThrough,
  startFlow,
  tokenRequests,
  trip,
  upstreamClient,
} from './redirect-support.js';

/*
 * Issue 26's presets through the routes: the real issuer hosts (accounts.google.com,
 * login.microsoftonline.com, appleid.apple.com, github.com, api.github.com) are sent to loopback
 * fakes by hostMappingFetch, so openid-client's issuer and tenant handling runs unchanged.
 */

const TENANT_A = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const TENANT_B = '4b2462a4-bbee-495a-a0e1-f23ae524cc9c';
const entraIssuer = (tid: string) => `https://login.microsoftonline.com/${tid}/v2.0`;
const APPLE_TEAM = 'TEAM123456';
const APPLE_KEY_ID = 'KEY1234567';

let t: TestApp;
let google: Upstream;
let entra: Upstream;
let apple: Upstream;
let github: GitHubFake;
const hosts: Record<string, string> = {};
const outbound = hostMappingFetch(hosts);
const appleKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });

beforeAll(async () => {
  google = await startUpstream({ issuer: 'https://accounts.google.com', ...upstreamClient('google') });
  entra = await startUpstream({
    issuer: entraIssuer(TENANT_A),
    pathPrefix: '/common/v2.0',
    discovery: (document) => ({ ...document, issuer: 'https://login.microsoftonline.com/{tenantid}/v2.0' }),
    omitIssParameter: true,
    ...upstreamClient('microsoft'),
  });
  apple = await startUpstream({
    issuer: 'https://appleid.apple.com',
    ...upstreamClient('apple'),
    appleSecret: { publicKey: appleKeys.publicKey, teamId: APPLE_TEAM, keyId: APPLE_KEY_ID },
  });
  github = await startGitHub({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
  Object.assign(hosts, {
    'accounts.google.com': google.origin,
    'login.microsoftonline.com': entra.origin,
    'appleid.apple.com': apple.origin,
    'github.com': github.origin,
    'api.github.com': github.origin,
  });
  t = await createTestApp({
    upstreamFetch: outbound,
    env: appEnv([
      redirectEntry('google', { preset: 'google' }),
      // autoLink on: the nOAuth case must still not link an address Entra does not vouch for.
      redirectEntry('microsoft', { preset: 'microsoft', tenants: [TENANT_A], autoLink: 'verified_email' }),
      {
        name: 'apple',
        preset: 'apple',
        clientId: CLIENT_ID,
        teamId: APPLE_TEAM,
        keyId: APPLE_KEY_ID,
        privateKey: appleKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      },
      redirectEntry('github', { preset: 'github' }),
    ]),
  });
});

afterAll(async () => {
  await t?.close();
  await Promise.all([google, entra, apple, github].map((fake) => fake?.close()));
});

const email = (label: string, domain = 'example.com') =>
  `${label}-${randomBytes(4).toString('hex')}@${domain}`;
const hex = (n: number) => randomBytes(n).toString('hex');
/** An Entra object id (a GUID). */
const oid = () => `${hex(4)}-${hex(2)}-${hex(2)}-${hex(2)}-${hex(6)}`;

async function signedIn(res: LightMyRequestResponse): Promise<string> {
  expect(res.statusCode, res.body).toBe(201);
  const grant = res.json().data as Grant;
  expect(grant.kind).toBe('session');
  return identityOf(t, grant.accessToken);
}

describe('Google', () => {
  it('signs up with the ID token issuer spelled accounts.google.com, exchanging the code once', async () => {
    const sub = `1${hex(8)}`;
    const address = email('g', 'gmail.com');
    google.setAccount(sub, {
      email: address,
      email_verified: true,
      name: 'Grace Hopper',
      given_name: 'Grace',
      family_name: 'Hopper',
    });
    google.login = sub;
    google.tokenIssuer = 'accounts.google.com';
    try {
      const tokens = tokenRequests(google.requests);
      const { trip: done, res } = await signInThrough(t, 'google', { fetch: outbound });
      expect(new URL(done.started.json().data.authorizationUrl).origin).toBe('https://accounts.google.com');
      const identityId = await signedIn(res);
      expect(tokenRequests(google.requests)).toBe(tokens + 1);
      expect(await linkedTo(t, 'google', sub)).toEqual([identityId]);
      expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
      // The name the provider gives is the new identity's; the full name says no more than the two
      // parts joined, so no display name is kept.
      expect(await namesOf(t, identityId)).toEqual({
        givenName: 'Grace',
        familyName: 'Hopper',
        displayName: null,
      });

      // The other spelling signs the same identity in.
      google.tokenIssuer = undefined;
      expect(await signedIn((await signInThrough(t, 'google', { fetch: outbound })).res)).toBe(identityId);
    } finally {
      google.tokenIssuer = undefined;
    }
  });

  it('refuses any other issuer spelling', async () => {
    const sub = `1${hex(8)}`;
    google.setAccount(sub, { email: email('g2', 'gmail.com'), email_verified: true });
    google.login = sub;
    google.tokenIssuer = 'https://accounts.google.com.evil.example';
    try {
      const before = await footprint(t);
      const done = await trip(t, { provider: 'google' }, { fetch: outbound });
      expectError(done.callback, 'google', 'refused');
      expect(await footprint(t)).toEqual(before);
    } finally {
      google.tokenIssuer = undefined;
    }
  });
});

describe('Microsoft Entra (multi-tenant)', () => {
  it('keys the identity on tid:oid, with the email Entra asserts verified', async () => {
    const object = oid();
    const address = email('ann', 'contoso.com');
    const sub = `pairwise-${hex(6)}`;
    entra.setAccount(sub, { tid: TENANT_A, oid: object, email: address, xms_edov: true, name: 'Ann' });
    entra.login = sub;
    entra.tokenIssuer = entraIssuer(TENANT_A);
    const identityId = await signedIn((await signInThrough(t, 'microsoft', { fetch: outbound })).res);
    expect(await linksOf(t, identityId)).toEqual([`microsoft:${TENANT_A}:${object}`]);
    expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
    // A full name alone is the display name.
    expect(await namesOf(t, identityId)).toEqual({ givenName: null, familyName: null, displayName: 'Ann' });
    expect(entra.requests).toContain('GET /common/v2.0/.well-known/openid-configuration');
    expect(await signedIn((await signInThrough(t, 'microsoft', { fetch: outbound })).res)).toBe(identityId);
  });

  it('nOAuth: an email Entra does not assert verified never links to the local account holding it', async () => {
    const ceo = await createPerson(t.ctx, email('ceo', 'victim.example'));
    const object = oid();
    const sub = `pairwise-${hex(6)}`;
    entra.setAccount(sub, { tid: TENANT_A, oid: object, email: ceo.email, name: 'Not the CEO' });
    entra.login = sub;
    entra.tokenIssuer = entraIssuer(TENANT_A);
    const identityId = await signedIn((await signInThrough(t, 'microsoft', { fetch: outbound })).res);
    expect(identityId).not.toBe(ceo.identityId);
    expect(await identifiersOf(t, identityId)).toEqual([]);
    expect(await linksOf(t, ceo.identityId)).toEqual([]);
    expect(await identifiersOf(t, ceo.identityId)).toEqual([`${ceo.email}:verified`]);
  });

  it('refuses a tenant outside the allow-list: nothing made or linked', async () => {
    const object = oid();
    const sub = `pairwise-${hex(6)}`;
    entra.setAccount(sub, { tid: TENANT_B, oid: object, email: email('b', 'fabrikam.com'), xms_edov: true });
    entra.login = sub;
    entra.tokenIssuer = entraIssuer(TENANT_B);
    try {
      const before = await footprint(t);
      const done = await trip(t, { provider: 'microsoft' }, { fetch: outbound });
      expectError(done.callback, 'microsoft', 'refused');
      expect(await footprint(t)).toEqual(before);
      expect(await linkedTo(t, 'microsoft', `${TENANT_B}:${object}`)).toEqual([]);
    } finally {
      entra.tokenIssuer = entraIssuer(TENANT_A);
    }
  });
});

describe('Apple (form_post)', () => {
  it('sets the flow cookie SameSite=None, takes the form POST callback, and signs the same identity in later', async () => {
    const sub = `001${hex(4)}.${hex(8)}`;
    const address = `${hex(6)}@privaterelay.appleid.com`;
    apple.setAccount(sub, { email: address, email_verified: 'true', is_private_email: 'true' });
    apple.login = sub;
    // Apple's first authorization only: the person's name as an unsigned form field.
    apple.appleUser = { name: { firstName: 'Ada', lastName: 'Lovelace' }, email: address };
    const browser = new Browser();
    const started = await startFlow(t, browser, { provider: 'apple' });
    expect(started.statusCode, started.body).toBe(201);
    const [cookie] = setCookies(started);
    expect(cookie).toMatch(
      /^__Host-identity-provider-flow-[0-9a-f]{16}=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; SameSite=None; Secure$/,
    );
    expect(new URL(started.json().data.authorizationUrl).searchParams.get('response_mode')).toBe('form_post');
    const arrival = await atUpstream(started, 'apple', outbound);
    expect(arrival.method).toBe('POST');
    if (arrival.method !== 'POST') return;
    expect(arrival.form.has('user')).toBe(true);
    expect(arrival.url).toBe(callbackOf('apple'));
    const callback = await deliver(t, arrival, browser);
    const code = returned(callback).params.get('handoff');
    expect(code, String(callback.headers.location)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const identityId = await signedIn(await exchange(t, code as string, browser));
    expect(await linkedTo(t, 'apple', sub)).toEqual([identityId]);
    // email_verified is the string "true" at Apple.
    expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
    // The client secret was minted from the .p8 key and accepted by the fake's check.
    expect(apple.appleSecrets.length).toBeGreaterThan(0);

    // The name from the first authorization's `user` field is the new identity's.
    const named = { givenName: 'Ada', familyName: 'Lovelace', displayName: null };
    expect(await namesOf(t, identityId)).toEqual(named);

    // A later authorization carries no `user` field, and signs the same identity in, its name kept.
    expect(await signedIn((await signInThrough(t, 'apple', { fetch: outbound })).res)).toBe(identityId);
    expect(await namesOf(t, identityId)).toEqual(named);
  });

  it('refuses a form_post answer delivered as a GET', async () => {
    const sub = `001${hex(4)}.${hex(8)}`;
    apple.setAccount(sub, { email: `${hex(6)}@icloud.com`, email_verified: 'true' });
    apple.login = sub;
    const browser = new Browser();
    const arrival = await atUpstream(await startFlow(t, browser, { provider: 'apple' }), 'apple', outbound);
    if (arrival.method !== 'POST') throw new Error('expected a form_post');
    const asQuery = new URL(arrival.url);
    for (const [k, v] of arrival.form) asQuery.searchParams.append(k, v);
    const before = await footprint(t);
    expectError(await deliver(t, { method: 'GET', url: asQuery.href }, browser), 'apple', 'refused');
    expect(await footprint(t)).toEqual(before);
  });
});

describe('GitHub (OAuth 2, no ID token)', () => {
  it('keys on the numeric id and takes only a verified primary email', async () => {
    const id = 1_000_000 + Math.floor(Math.random() * 1_000_000);
    const address = email('octo');
    github.user = { id, login: 'octocat', name: 'The Octocat' };
    github.emails = [
      { email: email('old'), primary: false, verified: true },
      { email: address, primary: true, verified: true },
    ];
    const identityId = await signedIn((await signInThrough(t, 'github', { fetch: outbound })).res);
    expect(await linksOf(t, identityId)).toEqual([`github:${id}`]);
    expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
    expect(await namesOf(t, identityId)).toEqual({
      givenName: null,
      familyName: null,
      displayName: 'The Octocat',
    });
  });

  it('a primary email GitHub has not verified is no email at all', async () => {
    const id = 2_000_000 + Math.floor(Math.random() * 1_000_000);
    const local = await createPerson(t.ctx, email('gh-local'));
    github.user = { id, login: 'hubot', name: null };
    github.emails = [
      { email: email('secondary'), primary: false, verified: true },
      { email: local.email, primary: true, verified: false },
    ];
    const identityId = await signedIn((await signInThrough(t, 'github', { fetch: outbound })).res);
    expect(identityId).not.toBe(local.identityId);
    expect(await identifiersOf(t, identityId)).toEqual([]);
    expect(await linksOf(t, local.identityId)).toEqual([]);
  });

  it('a person declining at GitHub comes back cancelled', async () => {
    github.deny = true;
    const before = await footprint(t);
    const done = await trip(t, { provider: 'github' }, { fetch: outbound });
    expectError(done.callback, 'github', 'cancelled');
    expect(await footprint(t)).toEqual(before);
  });
});
