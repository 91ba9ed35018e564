import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';
import { call, join, ORGS } from '../organizations/support.js';
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

// "Require SSO" (docs/sso.md, "Require SSO") and group attributes to roles (docs/sso.md, "Groups
// and roles"). PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.

let t: TestApp;
let idp: TestIdp;
let s: SsoSetup;

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { PUBLIC_ORIGIN: ORIGIN, SIGN_IN_CODES: 'email' } });
  idp = await TestIdp.create(t.clock.now());
  s = await setUp(t, idp);
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const requirement = (on: boolean, setup = s) =>
  call(t.app, 'PUT', `${ORGS}/${setup.orgId}/sso-requirement`, setup.ownerToken, { requireSso: on });

const person = (setup = s) => createPerson(t.ctx, `p-${randomUUID().slice(0, 8)}@${setup.domain}`);

const passwordSignIn = (email: string, password: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'email', identifier: email, password },
  });

const live = async (accessToken: string) =>
  (await t.app.inject({ method: 'GET', url: '/api/v1/session/context', headers: bearer(accessToken) }))
    .statusCode;

async function ssoSignIn(nameId: string, setup = s, attributes?: Record<string, string | string[]>) {
  const flow = await startFlow(t, setup.connectionId);
  const res = await postAcs(
    t,
    setup.connectionId,
    idp.response({ ...good(setup, flow, t, nameId), ...(attributes ? { attributes } : {}) }),
    flow.cookie,
  );
  const code = handoffOf(res);
  expect(code, String(res.headers.location)).toBeTruthy();
  const grant = await exchange(t, code as string, flow.cookie);
  expect(grant.statusCode, grant.body).toBe(201);
  return grant.json().data as { kind: string; accessToken: string };
}

describe('require SSO', () => {
  let alice: Person;
  let aliceToken: string;
  let outsider: Person;
  let outsiderToken: string;

  it('is refused without a verified domain and an enabled connection (409), and by a plain member (403)', async () => {
    const bare = await createPerson(t.ctx);
    const bareToken = (await signIn(t.app, bare)).accessToken;
    const org = await call(t.app, 'POST', ORGS, bareToken, {
      name: 'Bare',
      slug: `bare-${randomUUID().slice(0, 8)}`,
    });
    const unmet = await call(t.app, 'PUT', `${ORGS}/${org.json().data.id}/sso-requirement`, bareToken, {
      requireSso: true,
    });
    expect(unmet.statusCode, unmet.body).toBe(409);
    expect(unmet.json().code).toBe('organization.sso_requirement_unmet');
    const plain = await createPerson(t.ctx);
    await join(t, s.orgId, plain.identityId, 'member');
    const denied = await call(
      t.app,
      'PUT',
      `${ORGS}/${s.orgId}/sso-requirement`,
      (await signIn(t.app, plain)).accessToken,
      { requireSso: true },
    );
    expect(denied.statusCode, denied.body).toBe(403);
  });

  it('turning it on ends the sessions of the domain’s people (epoch moved: grants with them), not others', async () => {
    alice = await person();
    outsider = await createPerson(t.ctx);
    aliceToken = (await signIn(t.app, alice)).accessToken;
    outsiderToken = (await signIn(t.app, outsider)).accessToken;
    const before = await t.ctx.database.db
      .selectFrom('identities')
      .select('session_epoch')
      .where('id', '=', alice.identityId)
      .executeTakeFirstOrThrow();
    const on = await requirement(true);
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json().data).toMatchObject({ organizationId: s.orgId, requireSso: true });
    expect(on.json().data.identitiesSignedOut).toBeGreaterThanOrEqual(1);
    expect(await live(aliceToken)).toBe(401);
    expect(await live(outsiderToken)).toBe(200);
    const after = await t.ctx.database.db
      .selectFrom('identities')
      .select('session_epoch')
      .where('id', '=', alice.identityId)
      .executeTakeFirstOrThrow();
    // OpenID grants are live only while their epoch is the identity's (oidc/repository.ts, grantLive).
    expect(after.session_epoch).toBeGreaterThan(before.session_epoch);
    const reasons = await t.ctx.database.db
      .selectFrom('sessions')
      .select('revoked_reason')
      .where('identity_id', '=', alice.identityId)
      .execute();
    expect(reasons.map((r) => r.revoked_reason)).toEqual(['sso_required']);
    const ended = await t.ctx.database.db
      .selectFrom('events')
      .select('type')
      .where('identity_id', '=', alice.identityId)
      .where('type', '=', 'session.ended')
      .execute();
    expect(ended).toHaveLength(1);
    const org = await call(t.app, 'GET', `${ORGS}/${s.orgId}`, s.ownerToken);
    expect(org.json().data.requireSso).toBe(true);
  });

  it('password sign-in in the domain: one identical refusal for right, wrong and unknown', async () => {
    const right = await passwordSignIn(alice.email, alice.password);
    const wrong = await passwordSignIn(alice.email, 'not the password at all');
    const unknown = await passwordSignIn(`nobody-${randomUUID().slice(0, 6)}@${s.domain}`, 'whatever it is');
    expect(right.statusCode).toBe(403);
    expect(right.json().code).toBe('identity.sso_required');
    expect(wrong.body).toBe(right.body);
    expect(unknown.body).toBe(right.body);
    expect(wrong.headers['content-type']).toBe(right.headers['content-type']);
    // Someone outside the domain is untouched.
    expect((await passwordSignIn(outsider.email, outsider.password)).statusCode).toBe(201);
  });

  it('sign-in codes, sign-up and password recovery in the domain are refused the same way', async () => {
    const email = (identifier: string) => ({ identifierType: 'email', identifier });
    for (const address of [alice.email, `nobody-${randomUUID().slice(0, 6)}@${s.domain}`]) {
      const code = await t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ins/codes',
        payload: email(address),
      });
      expect(code.statusCode, code.body).toBe(403);
      expect(code.json().code).toBe('identity.sso_required');
      const recovery = await t.app.inject({
        method: 'POST',
        url: '/api/v1/password-recoveries',
        payload: email(address),
      });
      expect(recovery.body).toBe(code.body);
      const signUp = await t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ups',
        payload: { ...email(address), password: 'a long and unusual passphrase 42' },
      });
      expect(signUp.body).toBe(code.body);
    }
  });

  it('another first factor of an identity in the domain gets the wrong-password refusal', async () => {
    // Alice's second, verified address outside the domain: the same path as a provider or a passkey
    // (sign-in/complete.ts), answered as a wrong password is, so it tells nothing about the password.
    const other = `alice-${randomUUID().slice(0, 6)}@elsewhere.example`;
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${alice.identityId}, 'email', ${other}, now(), now())`.execute(
      t.ctx.database.db,
    );
    const right = await passwordSignIn(other, alice.password);
    const wrong = await passwordSignIn(other, 'not the password at all');
    expect(right.statusCode).toBe(401);
    expect(right.body).toBe(wrong.body);
  });

  it('SSO sign-in still works for the domain', async () => {
    const grant = await ssoSignIn(alice.email);
    expect(grant.kind).toBe('session');
    expect(await live(grant.accessToken)).toBe(200);
  });

  it('is not in force while no connection is enabled, and turning it off restores every way in', async () => {
    const disable = await call(
      t.app,
      'PATCH',
      `${ORGS}/${s.orgId}/connections/${s.connectionId}`,
      s.ownerToken,
      {
        enabled: false,
      },
    );
    expect(disable.statusCode, disable.body).toBe(200);
    expect((await passwordSignIn(alice.email, alice.password)).statusCode).toBe(201);
    await call(t.app, 'PATCH', `${ORGS}/${s.orgId}/connections/${s.connectionId}`, s.ownerToken, {
      enabled: true,
    });
    expect((await passwordSignIn(alice.email, alice.password)).statusCode).toBe(403);
    const off = await requirement(false);
    expect(off.statusCode, off.body).toBe(200);
    expect(off.json().data).toEqual({ organizationId: s.orgId, requireSso: false, identitiesSignedOut: 0 });
    expect((await passwordSignIn(alice.email, alice.password)).statusCode).toBe(201);
  });

  it('an operator sets it through the admin API; audited', async () => {
    const on = await adminCall(t, 'PUT', `/organizations/${s.orgId}/sso-requirement`, { requireSso: true });
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json().data.requireSso).toBe(true);
    const audit = await t.ctx.database.db
      .selectFrom('audit_records')
      .select(['actor', 'details'])
      .where('name', '=', 'organization.sso_requirement.updated')
      .where('target', '=', s.orgId)
      .execute();
    expect(audit.some((a) => a.actor?.startsWith('admin:'))).toBe(true);
    expect((await passwordSignIn(alice.email, alice.password)).statusCode).toBe(403);
    const off = await adminCall(t, 'PUT', `/organizations/${s.orgId}/sso-requirement`, { requireSso: false });
    expect(off.statusCode, off.body).toBe(200);
    const missing = await adminCall(t, 'PUT', `/organizations/${randomUUID()}/sso-requirement`, {
      requireSso: true,
    });
    expect(missing.statusCode).toBe(404);
  });
});

describe('group attribute to roles', () => {
  let g: SsoSetup;

  beforeAll(async () => {
    g = await setUp(t, idp);
  });

  const roleOf = async (email: string) => {
    const row = await t.ctx.database.db
      .selectFrom('identifiers as i')
      .innerJoin('organization_memberships as m', 'm.identity_id', 'i.identity_id')
      .select('m.role')
      .where('i.value', '=', email)
      .where('m.organization_id', '=', g.orgId)
      .executeTakeFirst();
    return row?.role;
  };

  it('refuses an unknown role or owner in the mapping (422)', async () => {
    for (const role of ['owner', 'no-such-role']) {
      const bad = await call(
        t.app,
        'PATCH',
        `${ORGS}/${g.orgId}/connections/${g.connectionId}`,
        g.ownerToken,
        {
          groupAttribute: 'groups',
          groupRoles: [{ group: 'x', role }],
        },
      );
      expect(bad.statusCode, bad.body).toBe(422);
      expect(bad.json().code).toBe('organization.connection_invalid');
    }
  });

  it('the member’s role follows the first matching group at each sign-in, else the default role', async () => {
    const set = await call(t.app, 'PATCH', `${ORGS}/${g.orgId}/connections/${g.connectionId}`, g.ownerToken, {
      groupAttribute: 'groups',
      groupRoles: [
        { group: 'idp-admins', role: 'admin' },
        { group: 'staff', role: 'member' },
      ],
    });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json().data).toMatchObject({
      groupAttribute: 'groups',
      groupRoles: [
        { group: 'idp-admins', role: 'admin' },
        { group: 'staff', role: 'member' },
      ],
    });
    const email = `grp-${randomUUID().slice(0, 8)}@${g.domain}`;
    await ssoSignIn(email, g, { groups: ['staff', 'idp-admins'] });
    expect(await roleOf(email)).toBe('admin');
    await ssoSignIn(email, g, { groups: 'staff' });
    expect(await roleOf(email)).toBe('member');
    await ssoSignIn(email, g, { groups: 'idp-admins' });
    expect(await roleOf(email)).toBe('admin');
    await ssoSignIn(email, g);
    expect(await roleOf(email)).toBe('member');
    const updated = await t.ctx.database.db
      .selectFrom('events')
      .select('type')
      .where('organization_id', '=', g.orgId)
      .where('type', '=', 'organization.membership.updated')
      .execute();
    expect(updated.length).toBe(3);
  });

  it('an owner is never moved by the mapping', async () => {
    const ownerRow = await t.ctx.database.db
      .selectFrom('organization_memberships as m')
      .innerJoin('identifiers as i', 'i.identity_id', 'm.identity_id')
      .select(['i.value', 'm.identity_id'])
      .where('m.organization_id', '=', g.orgId)
      .where('m.role', '=', 'owner')
      .executeTakeFirstOrThrow();
    // The owner's address is outside the domain; give them one inside it to sign in through the IdP.
    const inside = `owner-${randomUUID().slice(0, 6)}@${g.domain}`;
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${ownerRow.identity_id}, 'email', ${inside}, now(), now())`.execute(
      t.ctx.database.db,
    );
    await ssoSignIn(inside, g, { groups: 'staff' });
    expect(await roleOf(inside)).toBe('owner');
  });
});
