import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, ADMIN_KEY_NAME, OTHER_ADMIN_KEY } from '../../helpers/admin.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { auditCount } from '../../helpers/audit.js';
import { createPerson } from '../../helpers/identities.js';
import { context, renew } from '../../sessions/support.js';
import { call, expectProblem, join, member, ORGS, orgClaims, switchTo, uniqueSlug } from '../support.js';

// The operators' organization routes (docs/organizations.md, "Operators"): create whatever
// ORGANIZATION_CREATION says, read, list, disable and enable, delete, and manage members with the
// last-owner rule, every write audited with the operator as actor.
let t: TestApp;
const OPERATOR = `admin:${ADMIN_KEY_NAME}`;
const ACTOR = { actor: OPERATOR };

beforeAll(async () => {
  // Creation closed to the session route: the operators' route is not governed by it.
  t = await createTestApp({ admin: true, env: { ORGANIZATION_CREATION: 'operators' } });
});
afterAll(() => t.close());

function admin(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers },
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
}

async function adminCreate(ownerIdentityId: string, name = 'Operated') {
  const slug = uniqueSlug('adm');
  const res = await admin('POST', '/organizations', { name, slug, ownerIdentityId });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().data.id as string, slug, res };
}

describe('POST /admin/v1/organizations', () => {
  it('creates an organization owned by the identity named, although the session route is closed', async () => {
    const owner = await member(t);
    expectProblem(
      await call(t.app, 'POST', ORGS, owner.token, { name: 'Nope', slug: uniqueSlug() }),
      403,
      'organization.creation_disabled',
    );
    const { id, slug, res } = await adminCreate(owner.person.identityId, '  Acme  ');
    expect(res.json().data).toMatchObject({
      id,
      name: 'Acme',
      slug,
      requireSecondFactor: false,
      createdBy: owner.person.identityId,
      disabledAt: null,
      memberCount: 1,
      ownerCount: 1,
    });
    expect(res.headers.etag).toMatch(/^"/);
    expect(res.headers.location).toBe(`/admin/v1/organizations/${id}`);
    expect(await auditCount(t, 'organization.created', ACTOR)).toBeGreaterThanOrEqual(1);
    const { rows } = await sql<{ actor: string; details: Record<string, unknown> }>`
      SELECT actor, details FROM audit_records
      WHERE name = 'organization.created' AND details->>'organizationId' = ${id}`.execute(t.ctx.database.db);
    expect(rows).toEqual([{ actor: OPERATOR, details: { organizationId: id, slug, byOperator: true } }]);

    // The owner sees it through the session routes with the owner's role.
    const read = await call(t.app, 'GET', `${ORGS}/${id}`, owner.token);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().data.role).toBe('owner');

    // A slug in use, an unknown or erased owner, and a loose body are refused.
    expectProblem(
      await admin('POST', '/organizations', {
        name: 'Again',
        slug,
        ownerIdentityId: owner.person.identityId,
      }),
      409,
      'organization.slug_taken',
    );
    expectProblem(
      await admin('POST', '/organizations', { name: 'X', slug: uniqueSlug(), ownerIdentityId: randomUUID() }),
      404,
      'admin.identity_not_found',
    );
    const erased = await createPerson(t.ctx);
    expect((await admin('POST', `/identities/${erased.identityId}/erasures`)).statusCode).toBe(204);
    expectProblem(
      await admin('POST', '/organizations', {
        name: 'X',
        slug: uniqueSlug(),
        ownerIdentityId: erased.identityId,
      }),
      409,
      'admin.identity_erased',
    );
    expectProblem(
      await admin('POST', '/organizations', {
        name: 'X',
        slug: uniqueSlug(),
        ownerIdentityId: owner.person.identityId,
        extra: true,
      }),
      400,
      'validation.failed',
    );
  });

  it('needs the operator key; the public listener does not serve it', async () => {
    const res = await t.admin!.inject({ method: 'GET', url: '/admin/v1/organizations' });
    expectProblem(res, 401, 'admin.unauthorized');
    const pub = await t.app.inject({
      method: 'GET',
      url: '/admin/v1/organizations',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(pub.statusCode).toBe(404);
  });
});

describe('GET /admin/v1/organizations', () => {
  it('lists every organization newest first, disabled ones included, paged', async () => {
    const owner = await member(t);
    t.clock.advance(1);
    const a = await adminCreate(owner.person.identityId, 'A');
    t.clock.advance(1);
    const b = await adminCreate(owner.person.identityId, 'B');
    t.clock.advance(1);
    const c = await adminCreate(owner.person.identityId, 'C');
    expect((await admin('POST', `/organizations/${b.id}/disablements`)).statusCode).toBe(204);

    const first = await admin('GET', '/organizations?limit=2');
    expect(first.statusCode, first.body).toBe(200);
    const page1 = first.json();
    expect(page1.data.map((o: { id: string }) => o.id)).toEqual([c.id, b.id]);
    expect(page1.data[1].disabledAt).not.toBeNull();
    expect(page1.meta.pageInfo.hasNextPage).toBe(true);
    const second = await admin(
      'GET',
      `/organizations?limit=1&after=${encodeURIComponent(page1.meta.pageInfo.nextCursor)}`,
    );
    expect(second.json().data[0].id).toBe(a.id);
    expect(second.json().meta.pageInfo.hasNextPage).toBe(true); // the earlier tests' organizations

    // A cursor is bound to the key that asked for it.
    const other = await t.admin!.inject({
      method: 'GET',
      url: `/admin/v1/organizations?after=${encodeURIComponent(page1.meta.pageInfo.nextCursor)}`,
      headers: { authorization: `Bearer ${OTHER_ADMIN_KEY}` },
    });
    expect(other.statusCode).toBe(400);
  });
});

describe('GET /admin/v1/organizations/{id}', () => {
  it('answers the organization with member and owner counts and a strong ETag; unknown is 404', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await adminCreate(owner.person.identityId);
    await join(t, org.id, other.person.identityId, 'member');
    const res = await admin('GET', `/organizations/${org.id}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ id: org.id, memberCount: 2, ownerCount: 1 });
    const etag = String(res.headers.etag);
    expect(
      (await admin('GET', `/organizations/${org.id}`, undefined, { 'if-none-match': etag })).statusCode,
    ).toBe(304);
    // Disabling moves the version.
    await admin('POST', `/organizations/${org.id}/disablements`);
    const after = await admin('GET', `/organizations/${org.id}`, undefined, { 'if-none-match': etag });
    expect(after.statusCode).toBe(200);
    expect(after.json().data.disabledAt).not.toBeNull();
    expectProblem(await admin('GET', `/organizations/${randomUUID()}`), 404, 'admin.organization_not_found');
    expectProblem(await admin('GET', '/organizations/not-an-id'), 400, 'validation.failed');
  });
});

describe('PATCH /admin/v1/organizations/{id}', () => {
  it('changes the name and the policy (event, audit with the operator); turning the policy on ends acting in it without a second factor', async () => {
    const owner = await member(t);
    const org = await adminCreate(owner.person.identityId, 'Before');
    const switched = await switchTo(t.app, owner.token, org.id);
    expect(switched.statusCode, switched.body).toBe(200);
    const token = switched.json().data.accessToken as string;

    const res = await admin('PATCH', `/organizations/${org.id}`, {
      name: ' After ',
      requireSecondFactor: true,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({
      id: org.id,
      name: 'After',
      requireSecondFactor: true,
      memberCount: 1,
    });
    expect(res.headers.etag).toMatch(/^"/);
    expect(res.headers.etag).not.toBe(org.res.headers.etag);
    const { rows } = await sql<{ actor: string; details: Record<string, unknown> }>`
      SELECT actor, details FROM audit_records
      WHERE name = 'organization.updated' AND target = ${org.id}`.execute(t.ctx.database.db);
    expect(rows).toEqual([
      {
        actor: OPERATOR,
        details: {
          organizationId: org.id,
          name: true,
          requireSecondFactor: true,
          sessionsCleared: 1,
          byOperator: true,
        },
      },
    ]);
    const events = await sql<{ actor: string }>`
      SELECT actor FROM events WHERE type = 'organization.updated' AND organization_id = ${org.id}`.execute(
      t.ctx.database.db,
    );
    expect(events.rows).toEqual([{ actor: OPERATOR }]);
    // The owner, without a second factor, no longer acts in it: the next token carries no organization.
    expect(orgClaims(token).org_id).toBe(org.id);
    const renewed = await renew(t.app, owner.grant.refreshToken);
    expect(renewed.statusCode, renewed.body).toBe(201);
    expect(orgClaims(renewed.json().data.accessToken).org_id).toBeUndefined();

    // Off again: nothing cleared; the read shows it.
    const off = await admin('PATCH', `/organizations/${org.id}`, { requireSecondFactor: false });
    expect(off.statusCode, off.body).toBe(200);
    expect((await admin('GET', `/organizations/${org.id}`)).json().data.requireSecondFactor).toBe(false);

    expectProblem(await admin('PATCH', `/organizations/${org.id}`, {}), 400, 'validation.failed');
    expectProblem(await admin('PATCH', `/organizations/${org.id}`, { slug: 'x' }), 400, 'validation.failed');
    expectProblem(
      await admin('PATCH', `/organizations/${randomUUID()}`, { name: 'X' }),
      404,
      'admin.organization_not_found',
    );
  });
});

describe('disablements', () => {
  it('a disabled organization drops out of the session context and the next token, cannot be switched to; enabling restores it', async () => {
    const owner = await member(t);
    const org = await adminCreate(owner.person.identityId, 'Dimmed');
    const switched = await switchTo(t.app, owner.token, org.id);
    expect(switched.statusCode, switched.body).toBe(200);
    const token = switched.json().data.accessToken as string;
    expect(orgClaims(token).org_id).toBe(org.id);

    expect((await admin('POST', `/organizations/${org.id}/disablements`)).statusCode).toBe(204);
    // Idempotent, and audited each time with the operator as actor.
    expect((await admin('POST', `/organizations/${org.id}/disablements`)).statusCode).toBe(204);
    expect(await auditCount(t, 'organization.disabled', org.id)).toBe(2);
    const { rows } = await sql<{ actor: string; changed: string }>`
      SELECT actor, details->>'changed' AS changed FROM audit_records
      WHERE name = 'organization.disabled' AND target = ${org.id} ORDER BY seq`.execute(t.ctx.database.db);
    expect(rows).toEqual([
      { actor: OPERATOR, changed: 'true' },
      { actor: OPERATOR, changed: 'false' },
    ]);

    // The session context no longer lists it, nor marks it active.
    const ctx = await context(t.app, token);
    expect(ctx.statusCode, ctx.body).toBe(200);
    expect(ctx.json().data.organizations).toEqual([]);
    // The next token carries no organization.
    const renewed = await renew(t.app, owner.grant.refreshToken);
    expect(renewed.statusCode, renewed.body).toBe(201);
    expect(orgClaims(renewed.json().data.accessToken)).toEqual({
      org_id: undefined,
      org_role: undefined,
      org_permissions: undefined,
    });
    const fresh = renewed.json().data.accessToken as string;
    // Neither switchable to, nor readable or changeable by its members.
    expectProblem(await switchTo(t.app, fresh, org.id), 404, 'organization.not_found');
    expectProblem(await call(t.app, 'GET', `${ORGS}/${org.id}`, fresh), 404, 'organization.not_found');
    expectProblem(
      await call(t.app, 'PATCH', `${ORGS}/${org.id}`, fresh, { name: 'Back' }),
      404,
      'organization.not_found',
    );
    expect((await call(t.app, 'GET', ORGS, fresh)).json().data).toEqual([]);

    // Enabled again: listed and switchable once more.
    expect((await admin('DELETE', `/organizations/${org.id}/disablements`)).statusCode).toBe(204);
    expect(await auditCount(t, 'organization.enabled', org.id)).toBe(1);
    expect((await admin('GET', `/organizations/${org.id}`)).json().data.disabledAt).toBeNull();
    const back = await switchTo(t.app, fresh, org.id);
    expect(back.statusCode, back.body).toBe(200);
    expect(orgClaims(back.json().data.accessToken).org_id).toBe(org.id);

    expectProblem(
      await admin('POST', `/organizations/${randomUUID()}/disablements`),
      404,
      'admin.organization_not_found',
    );
  });
});

describe('DELETE /admin/v1/organizations/{id}', () => {
  it('deletes it with its memberships; the sessions acting in it act in none', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await adminCreate(owner.person.identityId, 'Doomed');
    await join(t, org.id, other.person.identityId, 'admin');
    const switched = await switchTo(t.app, other.token, org.id);
    expect(switched.statusCode, switched.body).toBe(200);

    expect((await admin('DELETE', `/organizations/${org.id}`)).statusCode).toBe(204);
    expect(await auditCount(t, 'organization.deleted', org.id)).toBe(1);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM organization_memberships WHERE organization_id = ${org.id}`.execute(
      t.ctx.database.db,
    );
    expect(rows[0].n).toBe(0);
    const active = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sessions WHERE active_organization_id = ${org.id}`.execute(
      t.ctx.database.db,
    );
    expect(active.rows[0].n).toBe(0);
    const renewed = await renew(t.app, other.grant.refreshToken);
    expect(orgClaims(renewed.json().data.accessToken).org_id).toBeUndefined();
    expectProblem(await admin('GET', `/organizations/${org.id}`), 404, 'admin.organization_not_found');
    expectProblem(await admin('DELETE', `/organizations/${org.id}`), 404, 'admin.organization_not_found');
  });
});

describe('members', () => {
  it('lists members with unmasked identifiers (each shown identity audited as read), paged', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await adminCreate(owner.person.identityId);
    t.clock.advance(1);
    await join(t, org.id, other.person.identityId, 'member');
    const res = await admin('GET', `/organizations/${org.id}/members?limit=1`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.data).toEqual([
      {
        identityId: other.person.identityId,
        role: 'member',
        joinedAt: expect.any(String),
        identifier: { type: 'email', value: other.person.email },
      },
    ]);
    expect(body.meta.pageInfo.hasNextPage).toBe(true);
    const next = await admin(
      'GET',
      `/organizations/${org.id}/members?after=${encodeURIComponent(body.meta.pageInfo.nextCursor)}`,
    );
    expect(next.json().data.map((m: { identityId: string }) => m.identityId)).toEqual([
      owner.person.identityId,
    ]);
    expect(await auditCount(t, 'admin.identity.read', other.person.identityId)).toBe(1);
    expect(await auditCount(t, 'admin.identity.read', owner.person.identityId)).toBe(1);
    expectProblem(
      await admin('GET', `/organizations/${randomUUID()}/members`),
      404,
      'admin.organization_not_found',
    );
  });

  it('adds (201) and changes (200) a member; the change reaches the next token; audited', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await adminCreate(owner.person.identityId);
    const added = await admin('PUT', `/organizations/${org.id}/members/${other.person.identityId}`, {
      role: 'member',
    });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json().data).toEqual({ identityId: other.person.identityId, role: 'member' });
    expect(await auditCount(t, 'organization.member.added', other.person.identityId)).toBe(1);

    const switched = await switchTo(t.app, other.token, org.id);
    expect(orgClaims(switched.json().data.accessToken).org_role).toBe('member');

    const changed = await admin('PUT', `/organizations/${org.id}/members/${other.person.identityId}`, {
      role: 'admin',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(await auditCount(t, 'organization.member.role_changed', other.person.identityId)).toBe(1);
    const { rows } = await sql<{ actor: string }>`
      SELECT actor FROM audit_records WHERE name = 'organization.member.role_changed'
      AND target = ${other.person.identityId}`.execute(t.ctx.database.db);
    expect(rows).toEqual([{ actor: OPERATOR }]);
    const renewed = await renew(t.app, other.grant.refreshToken);
    expect(orgClaims(renewed.json().data.accessToken).org_role).toBe('admin');

    // Same role: 200, nothing written.
    const same = await admin('PUT', `/organizations/${org.id}/members/${other.person.identityId}`, {
      role: 'admin',
    });
    expect(same.statusCode).toBe(200);
    expect(await auditCount(t, 'organization.member.role_changed', other.person.identityId)).toBe(1);

    expectProblem(
      await admin('PUT', `/organizations/${org.id}/members/${other.person.identityId}`, { role: 'wizard' }),
      422,
      'organization.role_unknown',
    );
    expectProblem(
      await admin('PUT', `/organizations/${org.id}/members/${randomUUID()}`, { role: 'member' }),
      404,
      'admin.identity_not_found',
    );
    expectProblem(
      await admin('PUT', `/organizations/${randomUUID()}/members/${other.person.identityId}`, {
        role: 'member',
      }),
      404,
      'admin.organization_not_found',
    );
    expectProblem(
      await admin('PUT', `/organizations/${org.id}/members/${other.person.identityId}`, {
        role: 'member',
        extra: 1,
      }),
      400,
      'validation.failed',
    );
  });

  it('keeps the last owner: neither demoted nor removed through the admin API', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await adminCreate(owner.person.identityId);
    await join(t, org.id, other.person.identityId, 'member');
    const path = `/organizations/${org.id}/members/${owner.person.identityId}`;
    expectProblem(await admin('PUT', path, { role: 'admin' }), 409, 'organization.last_owner');
    expectProblem(await admin('DELETE', path), 409, 'organization.last_owner');

    // With a second owner, the first may go; then the second is the last.
    const promote = await admin('PUT', `/organizations/${org.id}/members/${other.person.identityId}`, {
      role: 'owner',
    });
    expect(promote.statusCode, promote.body).toBe(200);
    expect((await admin('DELETE', path)).statusCode).toBe(204);
    expect(await auditCount(t, 'organization.member.removed', owner.person.identityId)).toBe(1);
    expectProblem(
      await admin('DELETE', `/organizations/${org.id}/members/${other.person.identityId}`),
      409,
      'organization.last_owner',
    );
    expectProblem(await admin('DELETE', path), 404, 'organization.member_not_found');
    expect((await admin('GET', `/organizations/${org.id}`)).json().data).toMatchObject({
      memberCount: 1,
      ownerCount: 1,
    });
  });

  it('the last-owner rule holds between an operator and a member at once (same lock)', async () => {
    const a = await member(t);
    const b = await member(t);
    const org = await createOrganizationAsOperator(a.person.identityId);
    await join(t, org, b.person.identityId, 'owner');
    // The operator demotes one owner while the other leaves: at most one succeeds.
    const [demote, leave] = await Promise.all([
      admin('PUT', `/organizations/${org}/members/${a.person.identityId}`, { role: 'member' }),
      call(t.app, 'DELETE', `${ORGS}/${org}/members/${b.person.identityId}`, b.token),
    ]);
    // One of the two wins (200 for the demotion, 204 for the leaving); the other finds one owner left.
    const outcomes = [demote.statusCode, leave.statusCode];
    expect(
      outcomes.filter((s) => s === 409),
      `${demote.body} ${leave.body}`,
    ).toHaveLength(1);
    expect(outcomes.filter((s) => s === 200 || s === 204)).toHaveLength(1);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM organization_memberships
      WHERE organization_id = ${org} AND role = 'owner'`.execute(t.ctx.database.db);
    expect(rows[0].n).toBe(1);
  });

  it('adding a member while the identity is erased leaves no membership, whichever runs first', async () => {
    const owner = await member(t);
    const org = await adminCreate(owner.person.identityId);
    for (let i = 0; i < 3; i++) {
      const doomed = await createPerson(t.ctx);
      const [put, erase] = await Promise.all([
        admin('PUT', `/organizations/${org.id}/members/${doomed.identityId}`, { role: 'member' }),
        admin('POST', `/identities/${doomed.identityId}/erasures`),
      ]);
      expect(erase.statusCode, erase.body).toBe(204);
      expect([201, 409], put.body).toContain(put.statusCode);
      if (put.statusCode === 409) expect(put.json().code).toBe('admin.identity_erased');
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM organization_memberships WHERE identity_id = ${doomed.identityId}`.execute(
        t.ctx.database.db,
      );
      expect(rows[0].n).toBe(0);
    }
  });

  it('the member route still refuses members without the permission (phase 1 unchanged)', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await adminCreate(owner.person.identityId);
    await join(t, org.id, other.person.identityId, 'member');
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${org.id}/members/${owner.person.identityId}`, other.token),
      403,
      'organization.permission_denied',
    );
  });
});

async function createOrganizationAsOperator(ownerIdentityId: string): Promise<string> {
  return (await adminCreate(ownerIdentityId)).id;
}
