import { randomBytes, randomUUID } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, OTHER_ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { followToCallback, hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { call, createOrganization, type Member, member, ORGS } from '../organizations/support.js';
import { parse, TestIdp } from './idp.js';
import { adminCall, good, ORIGIN, postAcs, REFUSED } from './support.js';

// Operators' connection tests through the admin API (docs/sso.md, "Testing a connection";
// docs/decisions.md, "Operators' connection tests"): the admin route makes the test and its
// single-use start URL on the public origin; opening it binds the flow to that browser and goes to
// the IdP (a SAML IdP made in the tests, a real oidc-provider as the OpenID one); the IdP's answer is
// checked as a sign-in's; the result is read only by the operator who started the test.

const ISSUER = 'https://idp.ops.example';
const CLIENT_ID = 'ops-client';
const CLIENT_SECRET = `ops-secret-${'o'.repeat(32)}`;
const DONE = `${ORIGIN}/account/#/sso-test-done`;
const GONE = `${DONE}?error=gone`;

let t: TestApp;
let idp: Upstream;
let samlIdp: TestIdp;
let owner: Member;
let orgId: string;
let domain: string;
let oidcId: string;
let samlId: string;
let samlAcs: string;
let samlEntity: string;
const hosts: Record<string, string> = {};

beforeAll(async () => {
  t = await createTestApp({
    admin: true,
    env: { PUBLIC_ORIGIN: ORIGIN },
    upstreamFetch: hostMappingFetch(hosts),
  });
  samlIdp = await TestIdp.create(t.clock.now());
  owner = await member(t);
  orgId = (await createOrganization(t, owner.token)).id;
  domain = `ops-${randomBytes(4).toString('hex')}.example`;
  const claimed = await call(t.app, 'POST', `${ORGS}/${orgId}/domains`, owner.token, { domain });
  expect(claimed.statusCode, claimed.body).toBe(201);
  const verified = await adminCall(
    t,
    'POST',
    `/organizations/${orgId}/domains/${claimed.json().data.id}/verifications`,
  );
  expect(verified.statusCode, verified.body).toBe(200);
  // Both disabled: a test runs whatever the connection's state.
  const oidc = await adminCall(t, 'POST', `/organizations/${orgId}/connections`, {
    type: 'oidc',
    name: 'Ops OpenID',
    oidc: { issuer: ISSUER, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET },
  });
  expect(oidc.statusCode, oidc.body).toBe(201);
  oidcId = oidc.json().data.id;
  const saml = await adminCall(t, 'POST', `/organizations/${orgId}/connections`, {
    type: 'saml',
    name: 'Ops SAML',
    saml: { metadataXml: samlIdp.metadata() },
  });
  expect(saml.statusCode, saml.body).toBe(201);
  samlId = saml.json().data.id;
  samlAcs = saml.json().data.saml.acsUrl;
  samlEntity = saml.json().data.saml.entityId;
  idp = await startUpstream({
    issuer: ISSUER,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: [`${ORIGIN}/api/v1/sso/oidc/${oidcId}/callback`],
  });
  hosts['idp.ops.example'] = idp.origin;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await idp?.close();
});

async function counts(): Promise<number[]> {
  const n = async (table: string) =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(t.ctx.database.db))
      .rows[0]?.n ?? 0;
  return [await n('identities'), await n('organization_memberships'), await n('sessions')];
}

/** POST /admin/v1/organizations/{id}/connections/{connectionId}/tests with `key`. */
function startTest(connectionId: string, key = ADMIN_KEY, org = orgId) {
  return t.admin!.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org}/connections/${connectionId}/tests`,
    headers: { authorization: `Bearer ${key}` },
  });
}

function readResult(id: string, key = ADMIN_KEY) {
  return t.admin!.inject({
    method: 'GET',
    url: `/admin/v1/connection-tests/${id}`,
    headers: { authorization: `Bearer ${key}` },
  });
}

interface Started {
  id: string;
  startUrl: string;
  expiresAt: string;
}

function started(res: LightMyRequestResponse): Started {
  expect(res.statusCode, res.body).toBe(201);
  const data = res.json().data as Started;
  expect(Object.keys(data).sort()).toEqual(['expiresAt', 'id', 'startUrl']);
  expect(data.startUrl.startsWith(`${ORIGIN}/api/v1/sso-test-starts/`)).toBe(true);
  return data;
}

/** The operator's browser opens the start URL: where it is sent, and the flow's cookie if any. */
async function open(startUrl: string): Promise<{ location: string; cookie?: string }> {
  const url = new URL(startUrl);
  const res = await t.app.inject({ method: 'GET', url: url.pathname });
  expect(res.statusCode, res.body).toBe(303);
  expect(res.headers['cache-control']).toBe('no-store');
  const setCookie = res.headers['set-cookie'];
  return {
    location: String(res.headers.location),
    ...(setCookie ? { cookie: String(setCookie).split(';')[0] as string } : {}),
  };
}

async function atIdp(redirectUrl: string, sub: string, claims: Record<string, unknown>) {
  idp.setAccount(sub, claims);
  const arrival = await followToCallback(redirectUrl, {
    callback: `${ORIGIN}/api/v1/sso/oidc/${oidcId}/callback`,
    fetch: hostMappingFetch(hosts),
  });
  return new URL(arrival.url);
}

function deliver(url: URL, cookie?: string) {
  return t.app.inject({
    method: 'GET',
    url: `${url.pathname}${url.search}`,
    headers: cookie ? { cookie } : {},
  });
}

function requestIdOf(redirectUrl: string): string {
  const request = new URL(redirectUrl).searchParams.get('SAMLRequest') ?? '';
  return (
    parse(inflateRawSync(Buffer.from(request, 'base64')).toString('utf8')).documentElement?.getAttribute(
      'ID',
    ) ?? ''
  );
}

const samlSetup = () => ({ acsUrl: samlAcs, entityId: samlEntity }) as Parameters<typeof good>[0];
const NOT_FOUND = ['organization.connection_test_not_found', 404];

describe("operators' connection tests (admin API)", () => {
  it('OpenID: the start URL goes to the IdP once; the answer is checked; the result is the starting operator’s alone; nothing is made', async () => {
    const before = await counts();
    const test = started(await startTest(oidcId));
    // Nothing to read before the IdP has answered.
    const early = await readResult(test.id);
    expect([early.json().code, early.statusCode]).toEqual(NOT_FOUND);
    const opened = await open(test.startUrl);
    expect(opened.location.startsWith(`${ISSUER}/`), opened.location).toBe(true);
    expect(opened.cookie).toMatch(/^(__Host-)?identity-saml-flow-[0-9a-f]{16}=/);
    // Single use: a second opening (another browser, a link scanner) binds nothing.
    expect(await open(test.startUrl)).toEqual({ location: GONE });
    const email = `ada-${randomUUID().slice(0, 6)}@${domain}`;
    const back = await atIdp(opened.location, 'ops-ada', { email, email_verified: true, given_name: 'Ada' });
    const res = await deliver(back, opened.cookie);
    expect([res.statusCode, res.headers.location]).toEqual([303, DONE]);
    const result = await readResult(test.id);
    expect(result.statusCode, result.body).toBe(200);
    const data = result.json().data;
    expect(data).toMatchObject({
      connection: { id: oidcId, type: 'oidc', name: 'Ops OpenID' },
      organizationId: orgId,
      passed: true,
      subject: 'ops-ada',
      nameIdFormat: null,
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
    // Readable again by the same operator; another key, an unknown id: the identical 404.
    expect((await readResult(test.id)).statusCode).toBe(200);
    const other = await readResult(test.id, OTHER_ADMIN_KEY);
    const unknown = await readResult(randomUUID());
    expect([other.json().code, other.statusCode]).toEqual(NOT_FOUND);
    expect(other.body).toBe(unknown.body);
    // No member's route reads it either (it has no code), and nothing was made.
    expect(await counts()).toEqual(before);
    const audited = await sql<{ actor: string; outcome: string; details: Record<string, string> }>`
      SELECT actor, outcome, details FROM audit_records
      WHERE name = 'organization.connection.tested' AND target = ${oidcId}`.execute(t.ctx.database.db);
    expect(audited.rows).toHaveLength(1);
    expect(audited.rows[0]).toMatchObject({ actor: 'admin:ops', outcome: 'success' });
    expect(audited.rows[0]?.details).toMatchObject({ organizationId: orgId, testId: test.id, failed: '' });
  });

  it('OpenID: the answer in another browser (no cookie), or to a start URL never opened, is refused and gives no result', async () => {
    const test = started(await startTest(oidcId));
    const opened = await open(test.startUrl);
    const back = await atIdp(opened.location, 'ops-eve', { email: `eve@${domain}` });
    expect((await deliver(back)).headers.location).toBe(REFUSED);
    // The flow was answered: the right browser coming late finds nothing either.
    expect((await deliver(back, opened.cookie)).headers.location).toBe(REFUSED);
    const r = await readResult(test.id);
    expect([r.json().code, r.statusCode]).toEqual(NOT_FOUND);
  });

  it('SAML: the NameID and attributes, every check of a sign-in (a wrong audience shows the failed check)', async () => {
    const before = await counts();
    const test = started(await startTest(samlId));
    const opened = await open(test.startUrl);
    expect(opened.location.startsWith(samlIdp.ssoUrl)).toBe(true);
    const email = `bo-${randomUUID().slice(0, 6)}@${domain}`;
    const res = await postAcs(
      t,
      samlId,
      samlIdp.response({
        ...good(samlSetup(), { requestId: requestIdOf(opened.location) }, t, email),
        attributes: { givenName: 'Bo', department: 'Ops' },
      }),
      opened.cookie,
    );
    expect([res.statusCode, res.headers.location]).toEqual([303, DONE]);
    const data = (await readResult(test.id)).json().data;
    expect(data).toMatchObject({
      connection: { id: samlId, type: 'saml' },
      passed: true,
      subject: email,
      email,
      attributes: { givenName: ['Bo'], department: ['Ops'] },
    });
    expect(data.checks.map((c: { check: string }) => c.check)).toEqual([
      'flow',
      'response',
      'email',
      'domain',
    ]);
    expect(await counts()).toEqual(before);

    const bad = started(await startTest(samlId));
    const badOpened = await open(bad.startUrl);
    await postAcs(
      t,
      samlId,
      samlIdp.response({
        ...good(samlSetup(), { requestId: requestIdOf(badOpened.location) }, t, email),
        audience: 'https://other.example',
      }),
      badOpened.cookie,
    );
    const failed = (await readResult(bad.id)).json().data;
    expect(failed.passed).toBe(false);
    expect(failed.checks[1]).toMatchObject({ check: 'response', passed: false });
    expect(await auditCount(t, 'organization.connection.tested', samlId)).toBe(2);
  });

  it('SAML: a response to a test whose start URL was never opened is refused (the flow is bound to no browser)', async () => {
    const test = started(await startTest(samlId));
    const row = await t.ctx.database.db
      .selectFrom('saml_flows')
      .select(['request_id', 'binding_hash'])
      .where('id', '=', test.id)
      .executeTakeFirstOrThrow();
    expect(row.binding_hash).toBeNull();
    const res = await postAcs(
      t,
      samlId,
      samlIdp.response(good(samlSetup(), { requestId: row.request_id }, t, `cy@${domain}`)),
    );
    expect(res.headers.location).toBe(REFUSED);
    // And once refused, its start URL is spent too (the flow was answered).
    expect(await open(test.startUrl)).toEqual({ location: GONE });
  });

  it('refusals: no key, an unknown organization, a connection of another organization', async () => {
    const none = await t.admin!.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/connections/${samlId}/tests`,
    });
    expect(none.statusCode).toBe(401);
    const unknownOrg = await startTest(samlId, ADMIN_KEY, randomUUID());
    expect([unknownOrg.statusCode, unknownOrg.json().code]).toEqual([404, 'admin.organization_not_found']);
    const otherOwner = await member(t);
    const otherOrg = (await createOrganization(t, otherOwner.token)).id;
    const elsewhere = await startTest(samlId, ADMIN_KEY, otherOrg);
    expect([elsewhere.statusCode, elsewhere.json().code]).toEqual([404, 'organization.connection_not_found']);
    const bogus = await t.app.inject({ method: 'GET', url: `/api/v1/sso-test-starts/${'x'.repeat(43)}` });
    expect([bogus.statusCode, bogus.headers.location]).toEqual([303, GONE]);
    expect(bogus.headers['set-cookie']).toBeUndefined();
  });

  it('a start URL expires with its flow (ten minutes), and a result ten minutes after the answer', async () => {
    const late = started(await startTest(samlId));
    const test = started(await startTest(samlId));
    const opened = await open(test.startUrl);
    await postAcs(
      t,
      samlId,
      samlIdp.response(good(samlSetup(), { requestId: requestIdOf(opened.location) }, t, `di@${domain}`)),
      opened.cookie,
    );
    expect((await readResult(test.id)).statusCode).toBe(200);
    t.clock.advance(601);
    expect(await open(late.startUrl)).toEqual({ location: GONE });
    const gone = await readResult(test.id);
    expect([gone.json().code, gone.statusCode]).toEqual(NOT_FOUND);
  });
});
