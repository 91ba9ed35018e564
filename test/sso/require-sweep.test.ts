import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { elevate, elevated } from '../helpers/elevation.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';
import { call, ORGS } from '../organizations/support.js';
import { newUser, SCIM, USER_SCHEMA } from '../scim/support.js';
import { addEmail, addMethod, uniqueEmail } from '../sign-in-methods/support.js';
import { TestIdp } from './idp.js';
import {
  adminCall,
  exchange,
  good,
  handoffOf,
  ORIGIN,
  postAcs,
  type SsoSetup,
  setUp,
  startFlow,
} from './support.js';

// "Require SSO" already on, then someone new comes under it (docs/sso.md, "Require SSO";
// docs/decisions.md, "Require SSO: sessions swept on a new domain or address"): a domain verified by
// DNS or by an operator, an address of a required domain added and confirmed, an address given by
// the directory (SCIM). Each ends, in its own transaction, the sessions of the identities it puts
// under the requirement, and nobody else's. PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.

let t: TestApp;
let idp: TestIdp;
let s: SsoSetup;
let dns: TestDns;

beforeAll(async () => {
  dns = await startDns();
  t = await createTestApp({
    admin: true,
    env: {
      PUBLIC_ORIGIN: ORIGIN,
      SIGN_IN_CODES: 'email',
      DNS_RESOLVERS: dns.address,
      DNS_TIMEOUT_MS: '500',
    },
  });
  idp = await TestIdp.create(t.clock.now());
  s = await setUp(t, idp);
  const on = await call(t.app, 'PUT', `${ORGS}/${s.orgId}/sso-requirement`, s.ownerToken, {
    requireSso: true,
  });
  expect(on.statusCode, on.body).toBe(200);
}, 300_000);
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

const live = async (accessToken: string) =>
  (await t.app.inject({ method: 'GET', url: '/api/v1/session/context', headers: bearer(accessToken) }))
    .statusCode;

/** A person signed in twice (two devices). */
async function signedIn(email?: string): Promise<{ person: Person; tokens: string[] }> {
  const person = await createPerson(t.ctx, email);
  const tokens = [(await signIn(t.app, person)).accessToken, (await signIn(t.app, person)).accessToken];
  return { person, tokens };
}

async function reasons(identityId: string) {
  const rows = await t.ctx.database.db
    .selectFrom('sessions')
    .select('revoked_reason')
    .where('identity_id', '=', identityId)
    .execute();
  return rows.map((r) => r.revoked_reason);
}

async function endedEvents(identityId: string) {
  const rows = await t.ctx.database.db
    .selectFrom('events')
    .select('data')
    .where('identity_id', '=', identityId)
    .where('type', '=', 'session.ended')
    .execute();
  return rows.map((r) => (r.data as { reason: string }).reason);
}

async function lastAudit(name: string, target: string) {
  const row = await t.ctx.database.db
    .selectFrom('audit_records')
    .select('details')
    .where('name', '=', name)
    .where('target', '=', target)
    .orderBy('seq', 'desc')
    .executeTakeFirst();
  return row?.details as Record<string, unknown> | undefined;
}

async function expectSwept(p: { person: Person; tokens: string[] }, sessions = p.tokens.length) {
  for (const token of p.tokens) expect(await live(token)).toBe(401);
  expect(await reasons(p.person.identityId)).toEqual(Array(sessions).fill('sso_required'));
  expect(await endedEvents(p.person.identityId)).toEqual(Array(sessions).fill('sso_required'));
}

async function expectUntouched(p: { person: Person; tokens: string[] }) {
  for (const token of p.tokens) expect(await live(token)).toBe(200);
  expect(await reasons(p.person.identityId)).toEqual(p.tokens.map(() => null));
}

async function claim(domain: string) {
  const res = await call(t.app, 'POST', `${ORGS}/${s.orgId}/domains`, s.ownerToken, { domain });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; txtRecord: { name: string; value: string } };
}

const newDomain = () => `more-${randomUUID().slice(0, 8)}.example`;

describe('a domain verified while the requirement is on', () => {
  it('by DNS: ends the sessions of its people (one session.ended each, audited), not of others', async () => {
    const domain = newDomain();
    const alice = await signedIn(`alice@${domain}`);
    const bob = await signedIn();
    const d = await claim(domain);
    dns.set(d.txtRecord.name, d.txtRecord.value);
    const verified = await call(
      t.app,
      'POST',
      `${ORGS}/${s.orgId}/domains/${d.id}/verifications`,
      s.ownerToken,
    );
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json().data.verifiedAt).not.toBeNull();
    await expectSwept(alice);
    await expectUntouched(bob);
    expect(await lastAudit('organization.domain.verified', d.id)).toMatchObject({
      by: 'dns',
      identitiesSignedOut: 1,
      sessionsEnded: 2,
    });
    // From now on the address is under the requirement.
    const again = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: alice.person.email, password: alice.person.password },
    });
    expect(again.statusCode, again.body).toBe(403);
    expect(await live(s.ownerToken)).toBe(200);
  });

  it('by an operator: the same', async () => {
    const domain = newDomain();
    const carol = await signedIn(`carol@${domain}`);
    const bob = await signedIn();
    const d = await claim(domain);
    const verified = await adminCall(t, 'POST', `/organizations/${s.orgId}/domains/${d.id}/verifications`);
    expect(verified.statusCode, verified.body).toBe(200);
    await expectSwept(carol);
    await expectUntouched(bob);
    expect(await lastAudit('organization.domain.verified', d.id)).toMatchObject({
      by: 'operator',
      identitiesSignedOut: 1,
      sessionsEnded: 2,
    });
  });

  it('of an organization not requiring SSO: nobody is signed out', async () => {
    const domain = newDomain();
    const dave = await signedIn(`dave@${domain}`);
    const owner = await signedIn();
    const org = await call(t.app, 'POST', ORGS, owner.tokens[0], {
      name: 'Plain',
      slug: `plain-${randomUUID().slice(0, 8)}`,
    });
    expect(org.statusCode, org.body).toBe(201);
    const orgId = org.json().data.id;
    const d = await call(t.app, 'POST', `${ORGS}/${orgId}/domains`, owner.tokens[0], { domain });
    const verified = await adminCall(
      t,
      'POST',
      `/organizations/${orgId}/domains/${d.json().data.id}/verifications`,
    );
    expect(verified.statusCode, verified.body).toBe(200);
    await expectUntouched(dave);
  });
});

describe('an address of a required domain becoming verified', () => {
  it('added and confirmed by the person: every session ends, the caller’s included; not others', async () => {
    const erin = await signedIn();
    const bob = await signedIn();
    const headers = elevated(erin.tokens[0], await elevate(t, erin.tokens[0], erin.person.email));
    // An address elsewhere changes nothing.
    await addEmail(t, headers, uniqueEmail('elsewhere'));
    await expectUntouched(erin);
    await addEmail(t, headers, `erin-${randomUUID().slice(0, 6)}@${s.domain}`);
    await expectSwept(erin);
    await expectUntouched(bob);
    expect(await lastAudit('identity.sign_in_method.verified', erin.person.identityId)).toMatchObject({
      kind: 'email',
      ssoRequired: true,
      sessionsEnded: 2,
    });
    // Its password is now refused, as for anyone holding an address of the domain.
    const again = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: erin.person.email, password: erin.person.password },
    });
    expect(again.statusCode, again.body).toBe(401);
  });

  it('the request to add it is not refused (only its confirmation ends sessions)', async () => {
    const fay = await signedIn();
    const headers = elevated(fay.tokens[0], await elevate(t, fay.tokens[0], fay.person.email));
    const res = await addMethod(t.app, headers, {
      identifierType: 'email',
      identifier: `fay-${randomUUID().slice(0, 6)}@${s.domain}`,
    });
    expect(res.statusCode, res.body).toBe(201);
    await expectUntouched(fay);
  });

  it('given by the directory (SCIM): the managed identity’s sessions end, SSO ones included', async () => {
    const created = await call(t.app, 'POST', `${ORGS}/${s.orgId}/scim-tokens`, s.ownerToken, {
      name: 'Okta',
    });
    expect(created.statusCode, created.body).toBe(201);
    const token = created.json().data.token as string;
    const scim = (method: 'POST' | 'PUT', path: string, body: unknown) =>
      t.app.inject({
        method,
        url: `${SCIM}${path}`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
        payload: JSON.stringify(body),
      });
    const user = newUser(s.domain);
    const made = await scim('POST', '/Users', user);
    expect(made.statusCode, made.body).toBe(201);
    const id = made.json().id as string;
    // Signed in through the organization's IdP: the only way in for the domain.
    const flow = await startFlow(t, s.connectionId);
    const acs = await postAcs(t, s.connectionId, idp.response(good(s, flow, t, user.userName)), flow.cookie);
    const grant = await exchange(t, handoffOf(acs) as string, flow.cookie);
    expect(grant.statusCode, grant.body).toBe(201);
    const ssoToken = grant.json().data.accessToken as string;
    expect(await live(ssoToken)).toBe(200);
    const bob = await signedIn();

    // A name change only: nothing ends.
    const renamed = await scim('PUT', `/Users/${id}`, {
      ...user,
      schemas: [USER_SCHEMA],
      displayName: 'Ada L.',
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(await live(ssoToken)).toBe(200);

    const next = `n${randomUUID().slice(0, 8)}@${s.domain}`;
    const moved = await scim('PUT', `/Users/${id}`, {
      ...user,
      schemas: [USER_SCHEMA],
      userName: next,
      emails: [{ primary: true, value: next, type: 'work' }],
    });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(await live(ssoToken)).toBe(401);
    expect(await reasons(id)).toEqual(['sso_required']);
    expect(await endedEvents(id)).toEqual(['sso_required']);
    expect(await lastAudit('organization.scim.user.updated', id)).toMatchObject({ sessionsEnded: 1 });
    await expectUntouched(bob);
  });
});
