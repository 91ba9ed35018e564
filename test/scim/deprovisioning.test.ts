import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { type Person, signIn } from '../helpers/identities.js';
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
import { call, createOrganization, member, ORGS } from '../organizations/support.js';
import { CONTEXT } from '../sessions/support.js';
import { expectScimError, newUser, PATCH_SCHEMA, SCIM, uniqueDomain } from './support.js';

// Issue 48, item 2: deprovisioning a managed identity (active false, DELETE) ends every session and
// OpenID grant in the same request and sends the client's back-channel logout (a real HTTP endpoint)
// before the SCIM answer returns.

let f: OidcFixture;
beforeAll(async () => {
  // The service's own sweep waits a minute: only the SCIM request's can have sent the logouts.
  f = await oidcFixture({ OIDC_SWEEP_SECONDS: '60' }, !!process.env.TEST_DATABASE_URL);
}, 60_000);
afterAll(async () => {
  await f?.close();
});

async function tenant() {
  const t = f.t;
  const owner = await member(t);
  const org = await createOrganization(t, owner.token);
  const domain = uniqueDomain();
  const claim = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, { domain });
  const verified = await t.admin!.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.id}/domains/${claim.json().data.id}/verifications`,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  expect(verified.statusCode).toBe(200);
  const created = await call(t.app, 'POST', `${ORGS}/${org.id}/scim-tokens`, owner.token, { name: 'Okta' });
  return { orgId: org.id, domain, token: created.json().data.token as string };
}

/** A SCIM request over real HTTP: its answer arrives only once the service has answered. */
async function scimHttp(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${f.origin}${SCIM}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body ? { 'content-type': 'application/scim+json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A provisioned person who then set a password, signed in to the API and to an app (a grant). */
async function provisionedAndSignedIn(tn: Awaited<ReturnType<typeof tenant>>) {
  const created = await scimHttp(tn.token, 'POST', '/Users', newUser(tn.domain));
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const password = `correct horse ${id.slice(0, 6)}`;
  await f.t.ctx.database.db
    .updateTable('identities')
    .set({ password_hash: await f.t.ctx.passwords.hash(password), password_changed_at: f.t.clock.now() })
    .where('id', '=', id)
    .execute();
  const person: Person = { identityId: id, email: created.body.userName, password };
  const api = await signIn(f.t.app, person);
  const hosted = await hostedSignIn(f, person);
  const config = await rpConfig(f, FIRST_PARTY);
  const auth = await startAuthorization(f, config, { scope: 'openid email' });
  const landed = await browse(f, auth.url.href, hosted.jar);
  const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
    pkceCodeVerifier: auth.verifier,
    expectedState: auth.state,
    expectedNonce: auth.nonce,
  });
  return { id, person, api, config, tokens, sid: tokens.claims()?.sid as string };
}

async function expectSignedOut(p: Awaited<ReturnType<typeof provisionedAndSignedIn>>) {
  // The back-channel logout was received before the SCIM answer came back: no sweep is run here.
  const sent = f.logoutTokens.map((x) => decodeJwt(x)).filter((x) => x.sid === p.sid);
  expect(sent).toHaveLength(1);
  expect(sent[0]).toMatchObject({ aud: FIRST_PARTY.id, sub: p.id });
  expect((await client.tokenIntrospection(p.config, p.tokens.access_token)).active).toBe(false);
  await expect(client.refreshTokenGrant(p.config, p.tokens.refresh_token as string)).rejects.toMatchObject({
    error: 'invalid_grant',
  });
  const ctx = await f.t.app.inject({
    method: 'GET',
    url: CONTEXT,
    headers: { authorization: `Bearer ${p.api.accessToken}` },
  });
  expect(ctx.statusCode).toBe(401);
  const again = await f.t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'email', identifier: p.person.email, password: p.person.password },
  });
  expect(again.statusCode).toBe(401);
}

describe('deprovisioning', () => {
  it('active false ends every session and grant with back-channel logout before the answer; reactivation lets them in again', async () => {
    const tn = await tenant();
    const p = await provisionedAndSignedIn(tn);
    const off = await scimHttp(tn.token, 'PATCH', `/Users/${p.id}`, {
      schemas: [PATCH_SCHEMA],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    await expectSignedOut(p);
    const identity = await f.t.ctx.database.db
      .selectFrom('identities')
      .select('disabled_at')
      .where('id', '=', p.id)
      .executeTakeFirstOrThrow();
    expect(identity.disabled_at).not.toBeNull();

    const on = await scimHttp(tn.token, 'PATCH', `/Users/${p.id}`, {
      schemas: [PATCH_SCHEMA],
      Operations: [{ op: 'replace', path: 'active', value: true }],
    });
    expect(on.status).toBe(200);
    expect((await signIn(f.t.app, p.person)).accessToken).toBeTruthy();
  });

  it('DELETE erases the managed identity, ending everything the same way', async () => {
    const tn = await tenant();
    const p = await provisionedAndSignedIn(tn);
    const del = await scimHttp(tn.token, 'DELETE', `/Users/${p.id}`);
    expect(del.status).toBe(204);
    await expectSignedOut(p);
    const identity = await f.t.ctx.database.db
      .selectFrom('identities')
      .select('erased_at')
      .where('id', '=', p.id)
      .executeTakeFirstOrThrow();
    expect(identity.erased_at).not.toBeNull();
    const gone = await f.t.app.inject({
      method: 'GET',
      url: `${SCIM}/Users/${p.id}`,
      headers: { authorization: `Bearer ${tn.token}` },
    });
    expectScimError(gone, 404);
  });

  it('an identity the organization does not manage only loses the membership', async () => {
    const tn = await tenant();
    const outsider = await member(f.t);
    const created = await scimHttp(
      tn.token,
      'POST',
      '/Users',
      newUser(tn.domain, { userName: outsider.person.email, emails: [{ value: outsider.person.email }] }),
    );
    expect(created.status).toBe(201);
    expect(created.body.id).toBe(outsider.person.identityId);
    const del = await scimHttp(tn.token, 'DELETE', `/Users/${outsider.person.identityId}`);
    expect(del.status).toBe(204);
    const ctx = await f.t.app.inject({
      method: 'GET',
      url: CONTEXT,
      headers: { authorization: `Bearer ${outsider.token}` },
    });
    expect(ctx.statusCode).toBe(200);
    expect(ctx.json().data.organizations).toEqual([]);
  });

  it("lists the person's plain groups in the organization claims (org_groups)", async () => {
    const tn = await tenant();
    const created = await scimHttp(tn.token, 'POST', '/Users', newUser(tn.domain));
    const id = created.body.id as string;
    const password = `correct horse ${id.slice(0, 6)}`;
    await f.t.ctx.database.db
      .updateTable('identities')
      .set({ password_hash: await f.t.ctx.passwords.hash(password), password_changed_at: f.t.clock.now() })
      .where('id', '=', id)
      .execute();
    expect(
      (await scimHttp(tn.token, 'POST', '/Groups', { displayName: 'Night shift', members: [{ value: id }] }))
        .status,
    ).toBe(201);
    // The API session, handed to the browser cookie, acts in the organization.
    const api = await signIn(f.t.app, { email: created.body.userName, password });
    const switched = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/session/active-organization',
      headers: { authorization: `Bearer ${api.accessToken}` },
      payload: { organizationId: tn.orgId },
    });
    expect(switched.statusCode, switched.body).toBe(200);
    const jar = new CookieJar();
    const handed = await fetch(`${f.origin}/api/v1/browser-session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: f.origin },
      body: JSON.stringify({ refreshToken: api.refreshToken }),
    });
    expect(handed.status).toBe(201);
    jar.take(handed);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { scope: 'openid organization' });
    const landed = await browse(f, auth.url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    expect(tokens.claims()).toMatchObject({
      org_id: tn.orgId,
      org_role: 'member',
      org_groups: ['Night shift'],
    });
  });
});
