import { randomBytes, randomUUID } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticationOf } from '../../src/features/oidc/provider.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { createPerson } from '../helpers/identities.js';
import { followToCallback, hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { call, createOrganization, join, type Member, member, ORGS } from '../organizations/support.js';
import { parse, TestIdp } from './idp.js';
import { adminCall, exchange, good, handoffOf, NOT_ALLOWED, ORIGIN, postAcs, REFUSED } from './support.js';

// Enterprise sign-in through an organization's OpenID connection (docs/sso.md, "OpenID
// connections"), and connection tests for OpenID and SAML ("Testing a connection"), against a real
// OpenID provider (oidc-provider) on loopback, reached as https://idp.corp.example.

const ISSUER = 'https://idp.corp.example';
const CLIENT_ID = 'corp-client';
const CLIENT_SECRET = `corp-secret-${'c'.repeat(32)}`;
const TEST_PAGE = `${ORIGIN}/account/#/sso-test`;

let t: TestApp;
let idp: Upstream;
let samlIdp: TestIdp;
let owner: Member;
let orgId: string;
let orgSlug: string;
let domain: string;
let connectionId: string;
let disabledId: string;
let samlId: string;
let samlAcs: string;
let samlEntity: string;

/** Where idp.corp.example is (read at each request): the IdP starts once the connections exist. */
const hosts: Record<string, string> = {};

beforeAll(async () => {
  t = await createTestApp({
    admin: true,
    env: { PUBLIC_ORIGIN: ORIGIN },
    upstreamFetch: hostMappingFetch(hosts),
  });
  samlIdp = await TestIdp.create(t.clock.now());
  owner = await member(t);
  const org = await createOrganization(t, owner.token);
  orgId = org.id;
  orgSlug = org.slug;
  domain = `corp-${randomBytes(4).toString('hex')}.example`;
  const claimed = await call(t.app, 'POST', `${ORGS}/${orgId}/domains`, owner.token, { domain });
  expect(claimed.statusCode, claimed.body).toBe(201);
  const verified = await adminCall(
    t,
    'POST',
    `/organizations/${orgId}/domains/${claimed.json().data.id}/verifications`,
  );
  expect(verified.statusCode, verified.body).toBe(200);
  const oidc = { issuer: ISSUER, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET };
  const created = await call(t.app, 'POST', `${ORGS}/${orgId}/connections`, owner.token, {
    type: 'oidc',
    name: 'Corp OpenID',
    enabled: true,
    oidc,
  });
  expect(created.statusCode, created.body).toBe(201);
  connectionId = created.json().data.id;
  expect(created.json().data.oidc.redirectUri).toBe(`${ORIGIN}/api/v1/sso/oidc/${connectionId}/callback`);
  const off = await call(t.app, 'POST', `${ORGS}/${orgId}/connections`, owner.token, {
    type: 'oidc',
    name: 'Corp OpenID (new)',
    enabled: false,
    oidc,
  });
  expect(off.statusCode, off.body).toBe(201);
  disabledId = off.json().data.id;
  const saml = await call(t.app, 'POST', `${ORGS}/${orgId}/connections`, owner.token, {
    type: 'saml',
    name: 'Corp SAML',
    enabled: false,
    saml: { metadataXml: samlIdp.metadata() },
  });
  expect(saml.statusCode, saml.body).toBe(201);
  samlId = saml.json().data.id;
  samlAcs = saml.json().data.saml.acsUrl;
  samlEntity = saml.json().data.saml.entityId;
  // The IdP's registration of this service: one client, a redirect URI per connection.
  const redirectUris = [connectionId, disabledId].map((id) => `${ORIGIN}/api/v1/sso/oidc/${id}/callback`);
  idp = await startUpstream({
    issuer: ISSUER,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris,
  });
  hosts['idp.corp.example'] = idp.origin;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await idp?.close();
});

let n = 0;
const address = (d = domain) => `oidc${++n}-${randomUUID().slice(0, 6)}@${d}`;

function cookieOf(res: LightMyRequestResponse): string {
  expect(res.statusCode, res.body).toBe(201);
  return String(res.headers['set-cookie']).split(';')[0] as string;
}

/** POST /sign-ins/sso by email, as the hosted identifier-first page does. */
async function start(email: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins/sso',
    headers: { origin: ORIGIN },
    payload: { email, returnTo: '/account/#/sign-in' },
  });
  return { cookie: cookieOf(res), redirectUrl: res.json().data.redirectUrl as string };
}

/** The browser at the IdP, signed in as `sub`, back at our callback: the callback's answer. */
async function atIdp(redirectUrl: string, sub: string, claims: Record<string, unknown>, id = connectionId) {
  idp.setAccount(sub, claims);
  const arrival = await followToCallback(redirectUrl, {
    callback: `${ORIGIN}/api/v1/sso/oidc/${id}/callback`,
    fetch: hostMappingFetch(hosts),
  });
  expect(arrival.method).toBe('GET');
  return new URL(arrival.url);
}

function deliver(url: URL, cookie?: string) {
  return t.app.inject({
    method: 'GET',
    url: `${url.pathname}${url.search}`,
    headers: cookie ? { cookie } : {},
  });
}

async function identityCount(): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM identities`.execute(t.ctx.database.db);
  return r.rows[0]?.n ?? 0;
}
async function membershipCount(): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM organization_memberships`.execute(
    t.ctx.database.db,
  );
  return r.rows[0]?.n ?? 0;
}
async function sessionCount(): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sessions`.execute(t.ctx.database.db);
  return r.rows[0]?.n ?? 0;
}
const holderOf = async (email: string) =>
  (
    await t.ctx.database.db
      .selectFrom('identifiers')
      .select('identity_id')
      .where('value', '=', email)
      .where('removed_at', 'is', null)
      .executeTakeFirst()
  )?.identity_id;

describe('sign-in through an OpenID connection', () => {
  it('an address of the verified domain is routed to the IdP and signed in (JIT), its session naming the connection', async () => {
    const email = address();
    const flow = await start(email);
    const authorize = new URL(flow.redirectUrl);
    expect(authorize.origin).toBe(ISSUER);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    const back = await atIdp(flow.redirectUrl, `jit-${n}`, {
      email,
      email_verified: true,
      given_name: 'Grace',
      family_name: 'Hopper',
    });
    const res = await deliver(back, flow.cookie);
    expect(res.statusCode).toBe(303);
    const code = handoffOf(res);
    expect(code, String(res.headers.location)).toBeTruthy();
    const grant = await exchange(t, code as string, flow.cookie);
    expect(grant.statusCode, grant.body).toBe(201);
    const who = await t.ctx.database.db
      .selectFrom('identifiers as i')
      .innerJoin('identities as p', 'p.id', 'i.identity_id')
      .select(['p.id', 'i.verified_at', 'p.given_name', 'p.family_name'])
      .where('i.value', '=', email)
      .executeTakeFirstOrThrow();
    expect(who.verified_at).not.toBeNull();
    expect([who.given_name, who.family_name]).toEqual(['Grace', 'Hopper']);
    const membership = await t.ctx.database.db
      .selectFrom('organization_memberships')
      .select('role')
      .where('organization_id', '=', orgId)
      .where('identity_id', '=', who.id)
      .executeTakeFirstOrThrow();
    expect(membership.role).toBe('member');
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: { authorization: `Bearer ${grant.json().data.accessToken}` },
    });
    expect(context.json().data.ssoConnection).toEqual({
      id: connectionId,
      name: 'Corp OpenID',
      organizationId: orgId,
    });
    expect(authenticationOf('sso', null, connectionId).amr).toEqual(['fed', `sso:${connectionId}`]);
    expect(await auditCount(t, 'identity.sso.registered', who.id)).toBe(1);
  });

  it('links to the verified holder of the address, without an email_verified claim (trusted for its verified domain)', async () => {
    const email = address();
    const person = await createPerson(t.ctx, email);
    const flow = await start(email);
    const res = await deliver(await atIdp(flow.redirectUrl, `link-${n}`, { email }), flow.cookie);
    const grant = await exchange(t, handoffOf(res) as string, flow.cookie);
    expect(grant.statusCode, grant.body).toBe(201);
    expect(await holderOf(email)).toBe(person.identityId);
    expect(await auditCount(t, 'identity.sso.linked', person.identityId)).toBe(1);
  });

  it('the organization parameter routes to the OpenID connection too', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/sso',
      headers: { origin: ORIGIN },
      payload: { organization: orgSlug, returnTo: '/account/#/sign-in' },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(new URL(res.json().data.redirectUrl).origin).toBe(ISSUER);
  });

  it('a wrong state, a wrong nonce and another browser are refused identically, and nothing is made', async () => {
    const before = await identityCount();
    const email = address();
    // Wrong state: no flow answers.
    const a = await start(email);
    const backA = await atIdp(a.redirectUrl, `bad-${n}`, { email, email_verified: true });
    backA.searchParams.set('state', randomBytes(32).toString('base64url'));
    const wrongState = await deliver(backA, a.cookie);
    // Wrong nonce: the IdP puts another nonce in the ID token.
    const b = await start(email);
    const tampered = new URL(b.redirectUrl);
    tampered.searchParams.set('nonce', randomBytes(32).toString('base64url'));
    const wrongNonce = await deliver(await atIdp(tampered.href, `bad-${n}`, { email }), b.cookie);
    // Another browser: the right callback without the flow's cookie, or with another flow's.
    const c = await start(email);
    const backC = await atIdp(c.redirectUrl, `bad-${n}`, { email });
    const other = await start(email);
    const noCookie = await deliver(backC, other.cookie);
    const answers = [wrongState, wrongNonce, noCookie].map((r) => [r.statusCode, r.headers.location, r.body]);
    expect(answers).toEqual([
      [303, REFUSED, ''],
      [303, REFUSED, ''],
      [303, REFUSED, ''],
    ]);
    // The callback of the right browser, once the flow was refused, is refused too (spent).
    expect((await deliver(backC, c.cookie)).headers.location).toBe(REFUSED);
    expect(await holderOf(email)).toBeUndefined();
    expect(await identityCount()).toBe(before);
  });

  it('an email outside the verified domains, or one the IdP says is unverified: not_allowed, nothing made', async () => {
    const before = await identityCount();
    const outside = address('elsewhere.example');
    const a = await start(address());
    const resA = await deliver(
      await atIdp(a.redirectUrl, `out-${n}`, { email: outside, email_verified: true }),
      a.cookie,
    );
    expect(resA.headers.location).toBe(NOT_ALLOWED);
    const unverified = address();
    const b = await start(unverified);
    const resB = await deliver(
      await atIdp(b.redirectUrl, `unv-${n}`, { email: unverified, email_verified: false }),
      b.cookie,
    );
    expect(resB.headers.location).toBe(NOT_ALLOWED);
    expect(await holderOf(outside)).toBeUndefined();
    expect(await holderOf(unverified)).toBeUndefined();
    expect(await identityCount()).toBe(before);
  });

  it('a disabled connection starts no sign-in, and one disabled mid-flow refuses the callback', async () => {
    const direct = await t.app.inject({
      method: 'POST',
      url: `/api/v1/sso/saml/${disabledId}/flows`,
      headers: { origin: ORIGIN },
      payload: { returnTo: '/account/#/sign-in' },
    });
    expect(direct.statusCode).toBe(404);
    const email = address();
    const flow = await start(email);
    const back = await atIdp(flow.redirectUrl, `dis-${n}`, { email });
    const off = await call(t.app, 'PATCH', `${ORGS}/${orgId}/connections/${connectionId}`, owner.token, {
      enabled: false,
    });
    expect(off.statusCode, off.body).toBe(200);
    try {
      expect((await deliver(back, flow.cookie)).headers.location).toBe(REFUSED);
      expect(await holderOf(email)).toBeUndefined();
    } finally {
      const on = await call(t.app, 'PATCH', `${ORGS}/${orgId}/connections/${connectionId}`, owner.token, {
        enabled: true,
      });
      expect(on.statusCode, on.body).toBe(200);
    }
  });
});

function startTest(who: Member, id: string) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${orgId}/connections/${id}/tests`,
    headers: { origin: ORIGIN, authorization: `Bearer ${who.token}` },
  });
}

function readResult(who: Member, code: string, cookie?: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sso-tests/results',
    headers: { origin: ORIGIN, authorization: `Bearer ${who.token}`, ...(cookie ? { cookie } : {}) },
    payload: { code },
  });
}

function resultCode(res: LightMyRequestResponse): string {
  expect(res.statusCode).toBe(303);
  const location = String(res.headers.location);
  expect(location.startsWith(`${TEST_PAGE}?result=`), location).toBe(true);
  return new URLSearchParams(location.split('?')[1]).get('result') as string;
}

describe('connection tests', () => {
  it('an OpenID test (connection disabled) shows the claims and checks, and signs in, creates and links nothing', async () => {
    const before = [await identityCount(), await membershipCount(), await sessionCount()];
    const email = address();
    const started = await startTest(owner, disabledId);
    const cookie = cookieOf(started);
    const res = await deliver(
      await atIdp(
        started.json().data.redirectUrl,
        `test-${n}`,
        { email, email_verified: true, given_name: 'Ada' },
        disabledId,
      ),
      cookie,
    );
    const code = resultCode(res);
    const result = await readResult(owner, code, cookie);
    expect(result.statusCode, result.body).toBe(200);
    const data = result.json().data;
    expect(data).toMatchObject({
      connection: { id: disabledId, type: 'oidc', name: 'Corp OpenID (new)' },
      organizationId: orgId,
      passed: true,
      subject: `test-${n}`,
      email,
      checks: [
        { check: 'flow', passed: true },
        { check: 'response', passed: true },
        { check: 'email', passed: true },
        { check: 'email_verified', passed: true },
        { check: 'domain', passed: true },
      ],
    });
    expect(data.attributes).toMatchObject({ email, given_name: 'Ada', iss: ISSUER, aud: CLIENT_ID });
    expect(data.attributes.nonce).toBeUndefined();
    expect(await holderOf(email)).toBeUndefined();
    expect([await identityCount(), await membershipCount(), await sessionCount()]).toEqual(before);
    expect(await auditCount(t, 'organization.connection.tested', disabledId)).toBeGreaterThan(0);
    // Only the tester, in the tester's browser: another member (even an owner) or no cookie, the same 404.
    const other = await member(t);
    const refusals = [await readResult(other, code, cookie), await readResult(owner, code)];
    for (const r of refusals)
      expect([r.statusCode, r.json().code]).toEqual([404, 'organization.connection_test_not_found']);
    expect(refusals[0]?.body).toBe(refusals[1]?.body);
  });

  it('a test whose ID token fails (wrong nonce) shows the failed check, and its result is no handoff', async () => {
    const started = await startTest(owner, connectionId);
    const cookie = cookieOf(started);
    const tampered = new URL(started.json().data.redirectUrl);
    tampered.searchParams.set('nonce', 'not-the-nonce');
    const res = await deliver(await atIdp(tampered.href, `fail-${n}`, { email: address() }), cookie);
    const code = resultCode(res);
    const data = (await readResult(owner, code, cookie)).json().data;
    expect(data.passed).toBe(false);
    expect(data.checks).toEqual([
      { check: 'flow', passed: true },
      { check: 'response', passed: false, reason: 'refused' },
    ]);
    expect((await exchange(t, code, cookie)).statusCode).toBe(401);
  });

  it('a SAML test (connection disabled) shows the NameID and attributes, and makes nothing', async () => {
    const before = [await identityCount(), await membershipCount(), await sessionCount()];
    const started = await startTest(owner, samlId);
    const cookie = cookieOf(started);
    const request = new URL(started.json().data.redirectUrl).searchParams.get('SAMLRequest') ?? '';
    const xml = inflateRawSync(Buffer.from(request, 'base64')).toString('utf8');
    const requestId = parse(xml).documentElement?.getAttribute('ID') ?? '';
    const email = address();
    const setup = { acsUrl: samlAcs, entityId: samlEntity } as Parameters<typeof good>[0];
    const res = await postAcs(
      t,
      samlId,
      samlIdp.response({
        ...good(setup, { requestId }, t, email),
        attributes: { givenName: 'Ada', department: 'R&D' },
      }),
      cookie,
    );
    const data = (await readResult(owner, resultCode(res), cookie)).json().data;
    expect(data).toMatchObject({
      connection: { id: samlId, type: 'saml' },
      passed: true,
      subject: email,
      nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      email,
      attributes: { givenName: ['Ada'], department: ['R&D'] },
    });
    expect(data.checks.map((c: { check: string }) => c.check)).toEqual([
      'flow',
      'response',
      'email',
      'domain',
    ]);
    expect(await holderOf(email)).toBeUndefined();
    expect([await identityCount(), await membershipCount(), await sessionCount()]).toEqual(before);
  });

  it('a SAML test with a response for the wrong audience shows why it was refused', async () => {
    const started = await startTest(owner, samlId);
    const cookie = cookieOf(started);
    const request = new URL(started.json().data.redirectUrl).searchParams.get('SAMLRequest') ?? '';
    const requestId =
      parse(inflateRawSync(Buffer.from(request, 'base64')).toString('utf8')).documentElement?.getAttribute(
        'ID',
      ) ?? '';
    const setup = { acsUrl: samlAcs, entityId: samlEntity } as Parameters<typeof good>[0];
    const res = await postAcs(
      t,
      samlId,
      samlIdp.response({ ...good(setup, { requestId }, t, address()), audience: 'https://other.example' }),
      cookie,
    );
    const data = (await readResult(owner, resultCode(res), cookie)).json().data;
    expect(data.passed).toBe(false);
    expect(data.checks[1]).toMatchObject({ check: 'response', passed: false });
  });

  it('only a member with connections:manage starts a test; a plain member is refused', async () => {
    const plain = await member(t);
    await join(t, orgId, plain.person.identityId, 'member');
    expect((await startTest(plain, connectionId)).statusCode).toBe(403);
    expect((await startTest(await member(t), connectionId)).statusCode).toBe(404);
  });
});
