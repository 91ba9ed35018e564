import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPerson, type Grant, type Person, signIn } from '../helpers/identities.js';
import {
  browse,
  CookieJar,
  FIRST_PARTY,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { createOrganization, join, member, remove, setRole, switchTo } from '../organizations/support.js';

// The `organization` scope: the ID token and userinfo carry the active organization of the service
// session the grant is linked to, read when they are asked for (docs/oidc.md, "Claims").

const ORG_CLAIMS = ['org_id', 'org_name', 'org_slug', 'org_role', 'org_permissions', 'org_groups'] as const;

function orgPart(claims: Record<string, unknown> | undefined) {
  return Object.fromEntries(ORG_CLAIMS.filter((k) => claims && k in claims).map((k) => [k, claims?.[k]]));
}

const ADMIN_PERMISSIONS = [
  'connections:manage',
  'domains:manage',
  'members:invite',
  'members:manage',
  'members:read',
  'organization:read',
  'organization:update',
];
const MEMBER_PERMISSIONS = ['members:read', 'organization:read'];

describe('OpenID Provider: the organization scope', () => {
  let f: OidcFixture;
  let config: client.Configuration;
  beforeAll(async () => {
    f = await oidcFixture();
    config = await rpConfig(f, FIRST_PARTY);
  });
  afterAll(async () => {
    await f.close();
  });

  /** A person signed in at the hosted pages, keeping the session's API grant to act in it. */
  async function hosted(): Promise<{ person: Person; api: Grant; jar: CookieJar }> {
    const person = await createPerson(f.t.ctx);
    const api = await signIn(f.t.app, person);
    const jar = new CookieJar();
    const res = await fetch(`${f.origin}/api/v1/browser-session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: f.origin },
      body: JSON.stringify({ refreshToken: api.refreshToken }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    jar.take(res);
    return { person, api, jar };
  }

  async function codeFlow(jar: CookieJar, scope: string) {
    const { url, verifier, state, nonce } = await startAuthorization(f, config, { scope });
    const landed = await browse(f, url.href, jar);
    expect(landed.page).toBeUndefined();
    return client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
  }

  it('is in the discovery document with its claims', async () => {
    const res = await fetch(`${f.origin}/.well-known/openid-configuration`);
    const doc = (await res.json()) as { scopes_supported: string[]; claims_supported: string[] };
    expect(doc.scopes_supported).toContain('organization');
    expect(doc.claims_supported).toEqual(expect.arrayContaining([...ORG_CLAIMS]));
  });

  it('carries the active organization; a role change shows at the next refresh, a removal clears it', async () => {
    const owner = await member(f.t);
    const org = await createOrganization(f.t, owner.token, 'Acme Labs');
    const { person, api, jar } = await hosted();
    await join(f.t, org.id, person.identityId, 'admin');
    const switched = await switchTo(f.t.app, api.accessToken, org.id);
    expect(switched.statusCode, switched.body).toBe(200);

    const tokens = await codeFlow(jar, 'openid email organization');
    expect(tokens.scope?.split(' ')).toContain('organization');
    const expected = {
      org_id: org.id,
      org_name: 'Acme Labs',
      org_slug: org.slug,
      org_role: 'admin',
      org_permissions: ADMIN_PERMISSIONS,
      org_groups: [],
    };
    expect(orgPart(tokens.claims())).toEqual(expected);
    const info = await client.fetchUserInfo(config, tokens.access_token, person.identityId);
    expect(orgPart(info)).toEqual(expected);

    // The owner demotes them: the next refresh's ID token and even the same access token's
    // userinfo answer say `member` at once.
    const demoted = await setRole(f.t.app, owner.token, org.id, person.identityId, 'member');
    expect(demoted.statusCode, demoted.body).toBe(200);
    const asMember = { ...expected, org_role: 'member', org_permissions: MEMBER_PERMISSIONS };
    expect(orgPart(await client.fetchUserInfo(config, tokens.access_token, person.identityId))).toEqual(
      asMember,
    );
    const renewed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(orgPart(renewed.claims())).toEqual(asMember);
    expect(orgPart(await client.fetchUserInfo(config, renewed.access_token, person.identityId))).toEqual(
      asMember,
    );

    // The organization disabled: no claims while it is.
    await f.t.ctx.database.db
      .updateTable('organizations')
      .set({ disabled_at: f.t.clock.now() })
      .where('id', '=', org.id)
      .execute();
    expect(orgPart(await client.fetchUserInfo(config, renewed.access_token, person.identityId))).toEqual({});
    await f.t.ctx.database.db
      .updateTable('organizations')
      .set({ disabled_at: null })
      .where('id', '=', org.id)
      .execute();
    expect(orgPart(await client.fetchUserInfo(config, renewed.access_token, person.identityId))).toEqual(
      asMember,
    );

    // Removed from the organization: the claims are gone from the next ID token and userinfo.
    const removed = await remove(f.t.app, owner.token, org.id, person.identityId);
    expect(removed.statusCode, removed.body).toBe(204);
    const after = await client.refreshTokenGrant(config, renewed.refresh_token as string);
    const idClaims = after.claims();
    expect(idClaims?.sub).toBe(person.identityId);
    expect(orgPart(idClaims)).toEqual({});
    const infoAfter = await client.fetchUserInfo(config, after.access_token, person.identityId);
    expect(infoAfter.email).toBe(person.email);
    expect(orgPart(infoAfter)).toEqual({});
  });

  it('follows the session: switching the hosted session to another organization changes the claims', async () => {
    const { person, api, jar } = await hosted();
    const first = await createOrganization(f.t, api.accessToken, 'First');
    const second = await createOrganization(f.t, api.accessToken, 'Second');

    // No active organization yet: the granted scope adds nothing.
    const tokens = await codeFlow(jar, 'openid organization');
    expect(orgPart(tokens.claims())).toEqual({});
    expect(orgPart(await client.fetchUserInfo(config, tokens.access_token, person.identityId))).toEqual({});

    expect((await switchTo(f.t.app, api.accessToken, first.id)).statusCode).toBe(200);
    const one = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(one.claims()).toMatchObject({ org_id: first.id, org_name: 'First', org_role: 'owner' });

    expect((await switchTo(f.t.app, api.accessToken, second.id)).statusCode).toBe(200);
    const two = await client.refreshTokenGrant(config, one.refresh_token as string);
    expect(two.claims()).toMatchObject({ org_id: second.id, org_slug: second.slug, org_role: 'owner' });
    const info = await client.fetchUserInfo(config, two.access_token, person.identityId);
    expect(info).toMatchObject({ org_id: second.id, org_name: 'Second' });
    expect(info.org_permissions).toEqual(expect.arrayContaining(['organization:delete']));
  });

  it('adds nothing without the scope, even with an active organization', async () => {
    const { person, api, jar } = await hosted();
    const org = await createOrganization(f.t, api.accessToken, 'Quiet');
    expect((await switchTo(f.t.app, api.accessToken, org.id)).statusCode).toBe(200);

    const tokens = await codeFlow(jar, 'openid email');
    expect(tokens.scope?.split(' ')).not.toContain('organization');
    const claims = tokens.claims();
    expect(claims?.sub).toBe(person.identityId);
    expect(orgPart(claims)).toEqual({});
    const info = await client.fetchUserInfo(config, tokens.access_token, person.identityId);
    expect(info.email).toBe(person.email);
    expect(orgPart(info)).toEqual({});
    const renewed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(orgPart(renewed.claims())).toEqual({});
  });
});
