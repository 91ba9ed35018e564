import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevate } from '../helpers/elevation.js';
import { bearer } from '../helpers/identities.js';
import { DEFAULT_POLICY, enrolVerified, type Factor, post } from '../second-factors/helpers.js';
import { context, renew } from '../sessions/support.js';
import {
  activeIn,
  call,
  createOrganization,
  expectProblem,
  join,
  member,
  ORGS,
  orgClaims,
  remove,
  setRole,
  switchTo,
} from './support.js';

// The active organization: switching, the token's claims, the session context, the second-factor
// policy, and role changes reaching the next request and token on another instance at once.
let t: TestApp;
let other: TestApp;

const NONE = { org_id: undefined, org_role: undefined, org_permissions: undefined };

beforeAll(async () => {
  t = await createTestApp();
  // A second instance on the same database, with the same root secret (the signing key is shared).
  other = await createTestApp({
    db: t.db,
    clock: t.clock,
    env: { SECRETS_KEY: t.config.secretsKey.toString('base64') },
  });
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

describe('POST /session/active-organization', () => {
  it('answers a new access token carrying org_id, org_role and org_permissions; the context marks it', async () => {
    const me = await member(t);
    expect(orgClaims(me.token)).toEqual(NONE);
    const first = await createOrganization(t, me.token, 'First');
    t.clock.advance(1);
    const second = await createOrganization(t, me.token, 'Second');

    const res = await switchTo(t.app, me.token, second.id);
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data;
    expect(Object.keys(data).sort()).toEqual([
      'accessToken',
      'accessTokenExpiresAt',
      'kind',
      'sessionExpiresAt',
    ]);
    expect(data.sessionExpiresAt).toBe(me.grant.sessionExpiresAt);
    expect(orgClaims(data.accessToken)).toEqual({
      org_id: second.id,
      org_role: 'owner',
      org_permissions: [
        'connections:manage',
        'directory:manage',
        'domains:manage',
        'members:invite',
        'members:manage',
        'members:read',
        'organization:delete',
        'organization:read',
        'organization:transfer',
        'organization:update',
      ],
    });
    expect(await auditCount(t, 'session.organization.switched', me.person.identityId)).toBe(1);

    // The old token still works (same session), and the context shows the memberships.
    const ctx = await context(t.app, data.accessToken);
    expect(ctx.statusCode, ctx.body).toBe(200);
    expect(ctx.json().data.organizations).toEqual([
      { id: second.id, name: 'Second', slug: second.slug, role: 'owner', groups: [], active: true },
      { id: first.id, name: 'First', slug: first.slug, role: 'owner', groups: [], active: false },
    ]);
    const list = await call(t.app, 'GET', ORGS, me.token);
    expect(list.json().data.map((o: { active: boolean }) => o.active)).toEqual([true, false]);

    // The renewal carries the active organization, and the refresh token was not spent by the switch.
    const renewed = await renew(t.app, me.grant.refreshToken);
    expect(renewed.statusCode, renewed.body).toBe(201);
    expect(orgClaims(renewed.json().data.accessToken).org_id).toBe(second.id);

    // An id in capitals names the same organization.
    const upper = await switchTo(t.app, me.token, second.id.toUpperCase());
    expect(upper.statusCode, upper.body).toBe(200);
    expect(orgClaims(upper.json().data.accessToken).org_id).toBe(second.id);

    // null: act in no organization.
    const cleared = await switchTo(t.app, me.token, null);
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(orgClaims(cleared.json().data.accessToken)).toEqual(NONE);
    const after = await context(t.app, me.token);
    expect(after.json().data.organizations.every((o: { active: boolean }) => !o.active)).toBe(true);
  });

  it('not a member and unknown are the identical 404; the body is strict', async () => {
    const owner = await member(t);
    const stranger = await member(t);
    const org = await createOrganization(t, owner.token);
    const notMember = await switchTo(t.app, stranger.token, org.id);
    const unknown = await switchTo(t.app, stranger.token, randomUUID());
    expectProblem(notMember, 404, 'organization.not_found');
    expect(notMember.body).toBe(unknown.body);
    expectProblem(
      await call(t.app, 'POST', '/api/v1/session/active-organization', stranger.token, {}),
      400,
      'validation.failed',
    );
    expectProblem(
      await call(t.app, 'POST', '/api/v1/session/active-organization', stranger.token, {
        organizationId: 'x',
      }),
      400,
      'validation.failed',
    );
    expectProblem(
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/session/active-organization',
        payload: { organizationId: null },
      }),
      401,
      'identity.session_required',
    );
  });

  it('an organization requiring a second factor refuses a member without one (403), then admits them once enrolled', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const patched = await call(t.app, 'PATCH', `${ORGS}/${org.id}`, owner.token, {
      requireSecondFactor: true,
    });
    expect(patched.statusCode).toBe(200);
    const me = await member(t);
    await join(t, org.id, me.person.identityId, 'member');
    const refused = await switchTo(t.app, me.token, org.id);
    expectProblem(refused, 403, 'organization.second_factor_required');
    expect(refused.json().detail).toMatch(/authenticator app or a passkey/);

    await enrolVerified(t, me.person, me.grant, DEFAULT_POLICY);
    const admitted = await switchTo(t.app, me.token, org.id);
    expect(admitted.statusCode, admitted.body).toBe(200);
    expect(orgClaims(admitted.json().data.accessToken)).toMatchObject({ org_id: org.id, org_role: 'member' });
  });

  it('turning the policy on stops members without a second factor acting in it at once; those with one stay', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const without = await member(t);
    const withOne = await member(t);
    await join(t, org.id, without.person.identityId, 'member');
    await join(t, org.id, withOne.person.identityId, 'member');
    await enrolVerified(t, withOne.person, withOne.grant, DEFAULT_POLICY);
    for (const m of [without, withOne]) expect((await switchTo(t.app, m.token, org.id)).statusCode).toBe(200);

    const patched = await call(t.app, 'PATCH', `${ORGS}/${org.id}`, owner.token, {
      requireSecondFactor: true,
    });
    expect(patched.statusCode, patched.body).toBe(200);

    expect(await activeIn(t.app, without.token, org.id)).toBe(false);
    expect(await activeIn(t.app, withOne.token, org.id)).toBe(true);
    // The next token of the member without one carries no organization; the other keeps it.
    expect(orgClaims((await renew(t.app, without.grant.refreshToken)).json().data.accessToken)).toEqual(NONE);
    expect(orgClaims((await renew(t.app, withOne.grant.refreshToken)).json().data.accessToken)).toMatchObject(
      {
        org_id: org.id,
      },
    );
  });
});

describe('GET /session/context lists memberships', () => {
  it('the newest 100 in enabled organizations, in the order GET /organizations pages them (ties by id)', async () => {
    const me = await member(t);
    const now = t.clock.now();
    // 103 memberships: ties on created_at in threes (decided by the organization id), one disabled.
    const orgs = Array.from({ length: 103 }, (_, i) => ({
      id: randomUUID(),
      createdAt: new Date(now.getTime() - Math.floor(i / 3) * 1000),
      disabled: i === 4,
    }));
    const db = t.ctx.database.db;
    await db
      .insertInto('organizations')
      .values(
        orgs.map((o, i) => ({
          id: o.id,
          name: `Many ${i}`,
          slug: `many-${o.id}`.slice(0, 40),
          created_by: me.person.identityId,
          created_at: o.createdAt,
          updated_at: o.createdAt,
          disabled_at: o.disabled ? now : null,
        })),
      )
      .execute();
    await db
      .insertInto('organization_memberships')
      .values(
        orgs.map((o) => ({
          organization_id: o.id,
          identity_id: me.person.identityId,
          role: 'member',
          created_at: o.createdAt,
          updated_at: o.createdAt,
        })),
      )
      .execute();
    const expected = orgs
      .filter((o) => !o.disabled)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1))
      .slice(0, 100)
      .map((o) => o.id);

    const ctx = await context(t.app, me.token);
    expect(ctx.statusCode, ctx.body).toBe(200);
    const listed = ctx.json().data.organizations as { id: string; role: string; active: boolean }[];
    expect(listed.map((o) => o.id)).toEqual(expected);
    expect(listed.every((o) => o.role === 'member' && o.active === false)).toBe(true);
    const page = await call(t.app, 'GET', `${ORGS}?limit=100`, me.token);
    expect(page.json().data.map((o: { id: string }) => o.id)).toEqual(expected);
  });
});

describe('removing a second factor under the policy', () => {
  const elevatedPost = async (m: Awaited<ReturnType<typeof member>>, url: string, factor: Factor) => {
    const elevation = await elevate(t, m.token, m.person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    return post(t.app, url, { token: m.token, elevation });
  };

  it('the last one stops the member acting in an organization that requires one, at once and in the next token', async () => {
    const owner = await member(t);
    const strict = await createOrganization(t, owner.token);
    const m = await member(t);
    await join(t, strict.id, m.person.identityId, 'member');
    const first = await enrolVerified(t, m.person, m.grant, DEFAULT_POLICY);
    const second = await enrolVerified(t, m.person, m.grant, DEFAULT_POLICY, 'spare', {
      factor: first,
      policy: DEFAULT_POLICY,
    });
    expect(
      (await call(t.app, 'PATCH', `${ORGS}/${strict.id}`, owner.token, { requireSecondFactor: true }))
        .statusCode,
    ).toBe(200);
    expect((await switchTo(t.app, m.token, strict.id)).statusCode).toBe(200);

    // One of two removed: still holds one, still acting.
    expect((await elevatedPost(m, `/second-factors/${first.id}/removals`, second)).statusCode).toBe(204);
    expect(await activeIn(t.app, m.token, strict.id)).toBe(true);

    // The last one removed: no longer acting there, and the next token says so.
    const audited = await auditCount(t, 'identity.second_factor.removed', { actor: m.person.identityId });
    expect((await elevatedPost(m, `/second-factors/${second.id}/removals`, second)).statusCode).toBe(204);
    expect(await auditCount(t, 'identity.second_factor.removed', { actor: m.person.identityId })).toBe(
      audited + 1,
    );
    expect(await activeIn(t.app, m.token, strict.id)).toBe(false);
    expect(orgClaims((await renew(t.app, m.grant.refreshToken)).json().data.accessToken)).toEqual(NONE);
    expectProblem(await switchTo(t.app, m.token, strict.id), 403, 'organization.second_factor_required');
  });

  it('an organization without the policy keeps the member acting after the last one goes', async () => {
    const owner = await member(t);
    const relaxed = await createOrganization(t, owner.token);
    const m = await member(t);
    await join(t, relaxed.id, m.person.identityId, 'member');
    const only = await enrolVerified(t, m.person, m.grant, DEFAULT_POLICY);
    expect((await switchTo(t.app, m.token, relaxed.id)).statusCode).toBe(200);
    expect((await elevatedPost(m, `/second-factors/${only.id}/removals`, only)).statusCode).toBe(204);
    expect(await activeIn(t.app, m.token, relaxed.id)).toBe(true);
    expect(orgClaims((await renew(t.app, m.grant.refreshToken)).json().data.accessToken)).toMatchObject({
      org_id: relaxed.id,
    });
  });
});

describe('a role change or removal reaches the next request and token on another instance', () => {
  it('a demotion on instance A: instance B refuses the write at once, and its next renewal carries the new role', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const admin = await member(t);
    await join(t, org.id, admin.person.identityId, 'admin');
    // The admin acts on instance B, its token saying admin.
    const switched = await switchTo(other.app, admin.token, org.id);
    const adminToken = switched.json().data.accessToken as string;
    expect(orgClaims(adminToken).org_role).toBe('admin');
    const before = await call(other.app, 'PATCH', `${ORGS}/${org.id}`, adminToken, { name: 'By admin' });
    expect(before.statusCode, before.body).toBe(200);

    // Demoted on instance A.
    expect((await setRole(t.app, owner.token, org.id, admin.person.identityId, 'member')).statusCode).toBe(
      200,
    );

    // The very next request on B decides by the role in the database, not by the token's claim.
    expectProblem(
      await call(other.app, 'PATCH', `${ORGS}/${org.id}`, adminToken, { name: 'Still admin?' }),
      403,
      'organization.permission_denied',
    );
    expect((await context(other.app, adminToken)).json().data.organizations[0]).toMatchObject({
      id: org.id,
      role: 'member',
      active: true,
    });
    const renewed = await renew(other.app, admin.grant.refreshToken);
    expect(orgClaims(renewed.json().data.accessToken)).toEqual({
      org_id: org.id,
      org_role: 'member',
      org_permissions: ['members:read', 'organization:read'],
    });
  });

  it('a removal on instance A: B answers 404 at once, the session loses its active organization, the next token has none', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const m = await member(t);
    await join(t, org.id, m.person.identityId, 'admin');
    const token = (await switchTo(other.app, m.token, org.id)).json().data.accessToken as string;
    expect((await call(other.app, 'GET', `${ORGS}/${org.id}`, token)).statusCode).toBe(200);

    expect((await remove(t.app, owner.token, org.id, m.person.identityId)).statusCode).toBe(204);

    expectProblem(await call(other.app, 'GET', `${ORGS}/${org.id}`, token), 404, 'organization.not_found');
    const ctx = await other.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(token),
    });
    expect(ctx.json().data.organizations).toEqual([]);
    const renewed = await renew(other.app, m.grant.refreshToken);
    expect(renewed.statusCode, renewed.body).toBe(201);
    expect(orgClaims(renewed.json().data.accessToken)).toEqual(NONE);
    // The session row itself no longer names it.
    const row = await t.ctx.auth.loadSession(
      (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { sid: string }).sid,
    );
    expect(row).toMatchObject({ activeOrganizationId: null, organizationRole: null });
  });
});
