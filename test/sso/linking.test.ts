import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticationOf } from '../../src/features/oidc/provider.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { createPerson, signIn } from '../helpers/identities.js';
import { call, join, ORGS } from '../organizations/support.js';
import { DEFAULT_POLICY, enrolVerified, totp } from '../second-factors/helpers.js';
import { TestIdp } from './idp.js';
import {
  adminCall,
  exchange,
  good,
  handoffOf,
  NOT_ALLOWED,
  ORIGIN,
  postAcs,
  REFUSED,
  type SsoSetup,
  setUp,
  startFlow,
} from './support.js';

// Issue 47, item 5: the linking rules (docs/sso.md, "Accounts"), one test per rule. The IdP speaks
// only for the organization's verified domains; it links to the verified holder of the address or
// makes one (JIT); anything else creates nothing and answers the documented not_allowed.

let t: TestApp;
let idp: TestIdp;
let s: SsoSetup;
let n = 0;

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { PUBLIC_ORIGIN: ORIGIN } });
  idp = await TestIdp.create(t.clock.now());
  s = await setUp(t, idp);
}, 180_000);
afterAll(async () => {
  await t?.close();
});

const address = (domain = s.domain) => `link${++n}-${randomUUID().slice(0, 6)}@${domain}`;

/** One SP-initiated trip with `options` changed from a good response: the ACS's answer. */
async function trip(nameId: string, extra: Partial<ReturnType<typeof good>> = {}, setup = s) {
  const flow = await startFlow(t, setup.connectionId);
  const res = await postAcs(
    t,
    setup.connectionId,
    idp.response({ ...good(setup, flow, t, nameId), ...extra }),
    flow.cookie,
  );
  return { res, flow };
}

async function signedInAs(nameId: string, extra: Partial<ReturnType<typeof good>> = {}, setup = s) {
  const { res, flow } = await trip(nameId, extra, setup);
  const code = handoffOf(res);
  expect(code, String(res.headers.location)).toBeTruthy();
  const grant = await exchange(t, code as string, flow.cookie);
  expect(grant.statusCode, grant.body).toBe(201);
  return grant.json().data as { kind: string; accessToken?: string };
}

const holderOf = async (email: string) =>
  (
    await t.ctx.database.db
      .selectFrom('identifiers')
      .select(['identity_id', 'verified_at'])
      .where('value', '=', email)
      .where('removed_at', 'is', null)
      .executeTakeFirst()
  )?.identity_id;

const roleOf = async (identityId: string, orgId = s.orgId) =>
  (
    await t.ctx.database.db
      .selectFrom('organization_memberships')
      .select('role')
      .where('organization_id', '=', orgId)
      .where('identity_id', '=', identityId)
      .executeTakeFirst()
  )?.role;

async function identityCount(): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM identities`.execute(t.ctx.database.db);
  return r.rows[0]?.n ?? 0;
}

async function expectNothingMade(email: string, res: { headers: Record<string, unknown> }, before: number) {
  expect(res.headers.location).toBe(NOT_ALLOWED);
  expect(await holderOf(email)).toBeUndefined();
  expect(await identityCount()).toBe(before);
}

describe('the linking rules', () => {
  it('a verified holder of the address is the identity signed in, and joins with the default role', async () => {
    const email = address();
    const person = await createPerson(t.ctx, email);
    const data = await signedInAs(email, { attributes: { givenName: 'Not', sn: 'Overwritten' } });
    expect(data.kind).toBe('session');
    expect(await holderOf(email)).toBe(person.identityId);
    expect(await roleOf(person.identityId)).toBe('member');
    expect(await auditCount(t, 'identity.sso.linked', person.identityId)).toBe(1);
    const names = await t.ctx.database.db
      .selectFrom('identities')
      .select(['given_name'])
      .where('id', '=', person.identityId)
      .executeTakeFirstOrThrow();
    expect(names.given_name).toBeNull();
  });

  it('no holder: an identity is made (JIT), its address verified, the IdP’s names, the connection’s default role', async () => {
    const setup = await setUp(t, idp);
    const changed = await call(
      t.app,
      'PATCH',
      `${ORGS}/${setup.orgId}/connections/${setup.connectionId}`,
      setup.ownerToken,
      {
        defaultRole: 'admin',
        attributeMapping: { givenName: 'first', familyName: 'last' },
      },
    );
    expect(changed.statusCode, changed.body).toBe(200);
    const email = address(setup.domain);
    await signedInAs(email, { attributes: { first: 'Grace', last: 'Hopper' } }, setup);
    const row = await t.ctx.database.db
      .selectFrom('identifiers as i')
      .innerJoin('identities as p', 'p.id', 'i.identity_id')
      .select(['p.id', 'i.verified_at', 'p.given_name', 'p.family_name'])
      .where('i.value', '=', email)
      .executeTakeFirstOrThrow();
    expect(row.verified_at).not.toBeNull();
    expect([row.given_name, row.family_name]).toEqual(['Grace', 'Hopper']);
    expect(await roleOf(row.id, setup.orgId)).toBe('admin');
  });

  it('a registration never confirmed yields: its address removed; a new identity holds it', async () => {
    const email = address();
    const squatter = randomUUID();
    await sql`INSERT INTO identities (id, created_at) VALUES (${squatter}, ${t.clock.now()})`.execute(
      t.ctx.database.db,
    );
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at) VALUES (${randomUUID()}, ${squatter}, 'email', ${email}, ${t.clock.now()})`.execute(
      t.ctx.database.db,
    );
    await signedInAs(email);
    const holder = await holderOf(email);
    expect(holder).toBeDefined();
    expect(holder).not.toBe(squatter);
    expect(await roleOf(squatter)).toBeUndefined();
    expect(await auditCount(t, 'identity.sign_up.superseded', squatter)).toBe(1);
  });

  it('a domain the organization claimed but did not verify: not_allowed, nothing made', async () => {
    const domain = `unverified-${randomUUID().slice(0, 8)}.example`;
    const claimed = await call(t.app, 'POST', `${ORGS}/${s.orgId}/domains`, s.ownerToken, { domain });
    expect(claimed.statusCode).toBe(201);
    const email = address(domain);
    const before = await identityCount();
    await expectNothingMade(email, (await trip(email)).res, before);
  });

  it('a domain another organization verified: not_allowed, nothing made, nobody there linked', async () => {
    const other = await setUp(t, await TestIdp.create(t.clock.now(), 'other'));
    const email = address(other.domain);
    const victim = await createPerson(t.ctx, email);
    const before = await identityCount();
    const { res } = await trip(email);
    expect(res.headers.location).toBe(NOT_ALLOWED);
    expect(await identityCount()).toBe(before);
    expect(await roleOf(victim.identityId)).toBeUndefined();
    const sessions = await t.ctx.database.db
      .selectFrom('sessions')
      .select('id')
      .where('identity_id', '=', victim.identityId)
      .execute();
    expect(sessions).toEqual([]);
  });

  it('an address outside every verified domain (a public mailbox): not_allowed, nothing made', async () => {
    const email = `someone-${randomUUID().slice(0, 8)}@gmail.com`;
    const before = await identityCount();
    await expectNothingMade(email, (await trip(email)).res, before);
  });

  it('no address at all (a persistent NameID, no email attribute): not_allowed', async () => {
    const before = await identityCount();
    const { res } = await trip(`opaque-${randomUUID()}`, {
      nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    });
    expect(res.headers.location).toBe(NOT_ALLOWED);
    expect(await identityCount()).toBe(before);
  });

  it('the mapped email attribute is the address, whatever the NameID says', async () => {
    const setup = await setUp(t, idp);
    await call(t.app, 'PATCH', `${ORGS}/${setup.orgId}/connections/${setup.connectionId}`, setup.ownerToken, {
      attributeMapping: { email: 'workMail' },
    });
    const email = address(setup.domain);
    await signedInAs(
      `opaque-${randomUUID()}`,
      {
        nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
        attributes: { workMail: email },
      },
      setup,
    );
    expect(await holderOf(email)).toBeDefined();
  });

  it('a member already keeps their role (an owner signing in through the IdP stays owner)', async () => {
    const email = address();
    const person = await createPerson(t.ctx, email);
    await join(t, s.orgId, person.identityId, 'admin');
    await signedInAs(email);
    expect(await roleOf(person.identityId)).toBe('admin');
  });

  it('a disabled holder: the one refusal, no session', async () => {
    const email = address();
    const person = await createPerson(t.ctx, email);
    await sql`UPDATE identities SET disabled_at = ${t.clock.now()} WHERE id = ${person.identityId}`.execute(
      t.ctx.database.db,
    );
    const { res } = await trip(email);
    expect(res.headers.location).toBe(REFUSED);
  });

  it('a disabled connection signs nobody in', async () => {
    const setup = await setUp(t, idp);
    const flow = await startFlow(t, setup.connectionId);
    await adminCall(t, 'PATCH', `/organizations/${setup.orgId}/connections/${setup.connectionId}`, {
      enabled: false,
    });
    const res = await postAcs(
      t,
      setup.connectionId,
      idp.response(good(setup, flow, t, address(setup.domain))),
      flow.cookie,
    );
    expect(res.headers.location).toBe(REFUSED);
    const start = await t.app.inject({
      method: 'POST',
      url: `/api/v1/sso/saml/${setup.connectionId}/flows`,
      headers: { origin: ORIGIN },
      payload: { returnTo: '/account/#/sign-in' },
    });
    expect(start.statusCode).toBe(404);
  });

  it('an identity holding a second factor gets the second step, as for every one-factor sign-in', async () => {
    const email = address();
    const person = await createPerson(t.ctx, email);
    const factor = await enrolVerified(t, person, await signIn(t.app, person), DEFAULT_POLICY);
    const data = (await signedInAs(email)) as {
      kind: string;
      accessToken?: string;
      secondFactorTicket?: string;
    };
    expect(data.kind).toBe('second_factor_required');
    expect(data.accessToken).toBeUndefined();
    // The session the second step opens names the connection of the first, like a one-step SSO
    // session: in its context and in the amr the OpenID Provider derives from it.
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/second-factors',
      headers: { origin: ORIGIN },
      payload: {
        secondFactorTicket: data.secondFactorTicket,
        code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
      },
    });
    expect(second.statusCode, second.body).toBe(201);
    const grant = second.json().data as { accessToken: string };
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: { authorization: `Bearer ${grant.accessToken}` },
    });
    expect(context.json().data.ssoConnection).toEqual({
      id: s.connectionId,
      name: 'Corp IdP',
      organizationId: s.orgId,
    });
    const session = await t.ctx.database.db
      .selectFrom('sessions')
      .select(['method', 'sso_connection_id'])
      .where('identity_id', '=', person.identityId)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'second_factor', sso_connection_id: s.connectionId });
    expect(authenticationOf(session.method, null, session.sso_connection_id)).toEqual({
      amr: ['fed', `sso:${s.connectionId}`, 'otp', 'mfa'],
      acr: authenticationOf('second_factor').acr,
    });
  });

  it('a second step after a password first step names no connection', async () => {
    const person = await createPerson(t.ctx, address());
    const factor = await enrolVerified(t, person, await signIn(t.app, person), DEFAULT_POLICY);
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: person.email, password: person.password },
    });
    expect(first.json().data.kind, first.body).toBe('second_factor_required');
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/second-factors',
      headers: { origin: ORIGIN },
      payload: {
        secondFactorTicket: first.json().data.secondFactorTicket,
        code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
      },
    });
    expect(second.statusCode, second.body).toBe(201);
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: { authorization: `Bearer ${second.json().data.accessToken}` },
    });
    expect(context.json().data.ssoConnection).toBeNull();
  });
});

describe('POST /sign-ins/sso: home-realm discovery', () => {
  const discover = (payload: Record<string, string | undefined>, origin = ORIGIN) =>
    t.app.inject({ method: 'POST', url: '/api/v1/sign-ins/sso', headers: { origin }, payload });

  it('an address in a verified domain: the IdP URL of the organization’s connection and the flow’s cookie', async () => {
    const res = await discover({
      email: `Someone@${s.domain.toUpperCase()}`,
      returnTo: '/account/#/sign-in',
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.redirectUrl).toMatch(
      new RegExp(`^${idp.ssoUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\?SAMLRequest=`),
    );
    expect(String(res.headers['set-cookie'])).toMatch(/^__Host-identity-saml-flow-[0-9a-f]{16}=/);
  });

  it('the organization by id or by slug', async () => {
    const slug = (
      await t.ctx.database.db
        .selectFrom('organizations')
        .select('slug')
        .where('id', '=', s.orgId)
        .executeTakeFirstOrThrow()
    ).slug;
    for (const organization of [s.orgId, slug]) {
      const res = await discover({ organization, returnTo: '/account/#/sign-in' });
      expect(res.statusCode, res.body).toBe(201);
    }
  });

  it('an unknown domain, an unverified one, an organization without an enabled connection: one identical 422', async () => {
    const plain = await setUp(t, idp);
    await adminCall(t, 'PATCH', `/organizations/${plain.orgId}/connections/${plain.connectionId}`, {
      enabled: false,
    });
    const bodies = new Set<string>();
    for (const payload of [
      { email: 'someone@nowhere-at-all.example' },
      { email: `someone@unclaimed-${randomUUID().slice(0, 6)}.example` },
      { email: `someone@${plain.domain}` },
      { organization: plain.orgId },
      { organization: 'no-such-organization' },
      { email: 'not-an-address' },
    ]) {
      const res = await discover({ ...payload, returnTo: '/account/#/sign-in' });
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('identity.sso_unavailable');
      const { traceId: _t, ...rest } = res.json();
      bodies.add(JSON.stringify(rest));
    }
    expect(bodies.size).toBe(1);
  });

  it('refused from another origin (it sets a cookie)', async () => {
    const res = await discover(
      { email: `someone@${s.domain}`, returnTo: '/account/#/sign-in' },
      'https://evil.example',
    );
    expect(res.statusCode).toBe(403);
  });
});
