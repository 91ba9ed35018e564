import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevate, elevated } from '../helpers/elevation.js';
import {
  call,
  createOrganization,
  expectProblem,
  join,
  type Member,
  member,
  ORGS,
  remove,
  setRole,
} from './support.js';

// Memberships and roles: permissions, who may grant what, the last owner, transfer, leaving.
let t: TestApp;

const ROLES = [
  {
    name: 'billing',
    permissions: ['billing:read', 'billing:write'],
    displayName: { en: 'Billing', fr: 'Facturation' },
  },
  { name: 'manager', permissions: ['members:read', 'members:manage'] },
];

beforeAll(async () => {
  t = await createTestApp({ env: { ORGANIZATION_ROLES: JSON.stringify(ROLES) } });
});
afterAll(async () => {
  await t?.close();
});

async function roles(token: string, organizationId: string): Promise<Record<string, string>> {
  const res = await call(t.app, 'GET', `${ORGS}/${organizationId}/members`, token);
  expect(res.statusCode, res.body).toBe(200);
  return Object.fromEntries(
    res.json().data.map((m: { identityId: string; role: string }) => [m.identityId, m.role]),
  );
}

/** An organization with an owner, and one member per role asked for. */
async function team(...asked: string[]): Promise<{ id: string; owner: Member; members: Member[] }> {
  const owner = await member(t);
  const { id } = await createOrganization(t, owner.token);
  const members: Member[] = [];
  for (const role of asked) {
    const m = await member(t);
    await join(t, id, m.person.identityId, role);
    members.push(m);
  }
  return { id, owner, members };
}

/** Gives the member a display name, as PATCH /account would. */
async function named(m: Member, displayName: string): Promise<void> {
  await t.ctx.database.db
    .updateTable('identities')
    .set({ display_name: displayName })
    .where('id', '=', m.person.identityId)
    .execute();
}

describe('members and roles', () => {
  it('GET answers every role with its display name and whether the caller may grant it', async () => {
    const { id, owner, members } = await team('admin', 'manager');
    const rolesOf = async (token: string) => {
      const res = await call(t.app, 'GET', `${ORGS}/${id}`, token);
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data.roles as Array<{ name: string; displayName: object; assignable: boolean }>;
    };
    expect(await rolesOf(owner.token)).toEqual([
      { name: 'owner', displayName: {}, assignable: true },
      { name: 'admin', displayName: {}, assignable: true },
      { name: 'member', displayName: {}, assignable: true },
      { name: 'billing', displayName: { en: 'Billing', fr: 'Facturation' }, assignable: true },
      { name: 'manager', displayName: {}, assignable: true },
    ]);
    // An admin lacks billing's permissions and owner: neither is offered.
    expect((await rolesOf(members[0].token)).filter((r) => r.assignable).map((r) => r.name)).toEqual([
      'admin',
      'member',
      'manager',
    ]);
    // The list names the caller's configured role by its display name too.
    const billing = await member(t);
    await join(t, id, billing.person.identityId, 'billing');
    const listed = await call(t.app, 'GET', ORGS, billing.token);
    expect(listed.json().data[0]).toMatchObject({
      role: 'billing',
      roleDisplayName: { en: 'Billing', fr: 'Facturation' },
    });
    expect((await rolesOf(members[1].token)).filter((r) => r.assignable).map((r) => r.name)).toEqual([
      'member',
      'manager',
    ]);
  });

  it('owners and admins (members:manage) see each member by their address and name, unmasked', async () => {
    const { id, owner, members } = await team('admin', 'member', 'manager');
    const [admin, plain] = members;
    await named(plain, 'Grace Hopper');
    for (const viewer of [owner, admin, members[2]]) {
      const res = await call(t.app, 'GET', `${ORGS}/${id}/members`, viewer.token);
      expect(res.statusCode, res.body).toBe(200);
      const list = res.json().data as Array<{
        identityId: string;
        display: string;
        masked: boolean;
        name: string | null;
      }>;
      const byId = new Map(list.map((m) => [m.identityId, m]));
      expect(byId.get(plain.person.identityId)).toMatchObject({
        display: plain.person.email,
        masked: false,
        name: 'Grace Hopper',
      });
      expect(byId.get(owner.person.identityId)).toMatchObject({
        display: owner.person.email,
        masked: false,
        name: null,
      });
    }
    // A plain member (members:read only) sees the same list masked, without names.
    const res = await call(t.app, 'GET', `${ORGS}/${id}/members`, plain.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).not.toContain(owner.person.email);
    expect(res.body).not.toContain('Grace Hopper');
    expect(
      (res.json().data as Array<{ masked: boolean; name: null }>).every((m) => m.masked && m.name === null),
    ).toBe(true);
  });

  it('lists members with a masked identifier; needs members:read', async () => {
    const { id, owner, members } = await team('member', 'billing');
    await named(owner, 'Ada Lovelace');
    const res = await call(t.app, 'GET', `${ORGS}/${id}/members`, members[0].token);
    expect(res.statusCode, res.body).toBe(200);
    const list = res.json().data as Array<{
      identityId: string;
      role: string;
      display: string;
      joinedAt: string;
    }>;
    expect(list.map((m) => m.identityId).sort()).toEqual(
      [owner, ...members].map((m) => m.person.identityId).sort(),
    );
    const ownerEntry = list.find((m) => m.identityId === owner.person.identityId);
    expect(ownerEntry?.role).toBe('owner');
    expect(ownerEntry?.display).not.toBe(owner.person.email);
    expect(ownerEntry?.display).toMatch(/\*/);
    expect(ownerEntry).toMatchObject({ masked: true, name: null });
    expect(res.body).not.toContain(owner.person.email);
    expect(res.body).not.toContain('Ada Lovelace');
    // billing has no members:read
    expectProblem(
      await call(t.app, 'GET', `${ORGS}/${id}/members`, members[1].token),
      403,
      'organization.permission_denied',
    );
  });

  it('an admin changes member roles, but neither grants nor takes owner', async () => {
    const { id, owner, members } = await team('admin', 'member');
    const [admin, plain] = members;
    const changed = await setRole(t.app, admin.token, id, plain.person.identityId, 'manager');
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toEqual({ identityId: plain.person.identityId, role: 'manager' });
    // billing:* are not the admin's to hand out; the owner holds every permission and may.
    expectProblem(
      await setRole(t.app, admin.token, id, plain.person.identityId, 'billing'),
      403,
      'organization.permission_denied',
    );
    expect((await setRole(t.app, owner.token, id, plain.person.identityId, 'billing')).statusCode).toBe(200);
    expect(await auditCount(t, 'organization.member.role_changed', plain.person.identityId)).toBe(2);
    expectProblem(
      await setRole(t.app, admin.token, id, plain.person.identityId, 'owner'),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await setRole(t.app, admin.token, id, owner.person.identityId, 'member'),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await setRole(t.app, admin.token, id, plain.person.identityId, 'emperor'),
      422,
      'organization.role_unknown',
    );
    expectProblem(
      await setRole(t.app, admin.token, id, randomUUID(), 'member'),
      404,
      'organization.member_not_found',
    );
    expectProblem(
      await setRole(t.app, plain.token, id, admin.person.identityId, 'member'),
      403,
      'organization.permission_denied',
    );
    // The owner can make an owner.
    const promoted = await setRole(t.app, owner.token, id, admin.person.identityId, 'owner');
    expect(promoted.statusCode, promoted.body).toBe(200);
    expect((await roles(owner.token, id))[admin.person.identityId]).toBe('owner');
  });

  it('members:manage never escalates: a manager cannot grant admin, nor touch an admin', async () => {
    const { id, members } = await team('manager', 'member', 'admin');
    const [manager, plain, admin] = members;
    expectProblem(
      await setRole(t.app, manager.token, id, plain.person.identityId, 'admin'),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await setRole(t.app, manager.token, id, manager.person.identityId, 'admin'),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await remove(t.app, manager.token, id, admin.person.identityId),
      403,
      'organization.permission_denied',
    );
    // A role within its own permissions it may hand out.
    const ok = await setRole(t.app, manager.token, id, plain.person.identityId, 'manager');
    expect(ok.statusCode, ok.body).toBe(200);
    expect((await setRole(t.app, manager.token, id, plain.person.identityId, 'member')).statusCode).toBe(200);
  });

  it('the last owner cannot be demoted, removed or leave (409); with two owners one may', async () => {
    const { id, owner, members } = await team('admin');
    const [admin] = members;
    expectProblem(
      await setRole(t.app, owner.token, id, owner.person.identityId, 'admin'),
      409,
      'organization.last_owner',
    );
    expectProblem(
      await remove(t.app, owner.token, id, owner.person.identityId),
      409,
      'organization.last_owner',
    );
    expect((await roles(owner.token, id))[owner.person.identityId]).toBe('owner');

    expect((await setRole(t.app, owner.token, id, admin.person.identityId, 'owner')).statusCode).toBe(200);
    // Now two owners: the first may step down, and then the second is the last.
    expect((await setRole(t.app, owner.token, id, owner.person.identityId, 'admin')).statusCode).toBe(200);
    expectProblem(
      await setRole(t.app, admin.token, id, admin.person.identityId, 'member'),
      409,
      'organization.last_owner',
    );
    expectProblem(
      await remove(t.app, admin.token, id, admin.person.identityId),
      409,
      'organization.last_owner',
    );
  });

  it('removal: members:manage removes a member; only an owner removes an owner; the removed see 404', async () => {
    const { id, owner, members } = await team('admin', 'member', 'owner');
    const [admin, plain, coOwner] = members;
    expectProblem(
      await remove(t.app, admin.token, id, coOwner.person.identityId),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await remove(t.app, plain.token, id, admin.person.identityId),
      403,
      'organization.permission_denied',
    );
    const removed = await remove(t.app, admin.token, id, plain.person.identityId);
    expect(removed.statusCode, removed.body).toBe(204);
    expectProblem(await call(t.app, 'GET', `${ORGS}/${id}`, plain.token), 404, 'organization.not_found');
    expectProblem(
      await remove(t.app, admin.token, id, plain.person.identityId),
      404,
      'organization.member_not_found',
    );
    expect((await remove(t.app, owner.token, id, coOwner.person.identityId)).statusCode).toBe(204);
    expect(await auditCount(t, 'organization.member.removed', plain.person.identityId)).toBe(1);
    expect(Object.keys(await roles(owner.token, id)).sort()).toEqual(
      [owner.person.identityId, admin.person.identityId].sort(),
    );
  });

  it('anyone may leave, whatever their permissions', async () => {
    const { id, owner, members } = await team('billing');
    const [billing] = members;
    const left = await remove(t.app, billing.token, id, billing.person.identityId);
    expect(left.statusCode, left.body).toBe(204);
    expect(Object.keys(await roles(owner.token, id))).toEqual([owner.person.identityId]);
    const list = await call(t.app, 'GET', ORGS, billing.token);
    expect(list.json().data).toEqual([]);
  });

  it('ownership transfer: owner only, elevated; the target becomes owner and the caller admin', async () => {
    const { id, owner, members } = await team('admin', 'member');
    const [admin, plain] = members;
    const url = `${ORGS}/${id}/ownership-transfers`;
    // Without an elevation: 403 identity.elevation_required.
    expectProblem(
      await call(t.app, 'POST', url, owner.token, { identityId: plain.person.identityId }),
      403,
      'identity.elevation_required',
    );
    const adminElevation = await elevate(t, admin.token, admin.person.email);
    const byAdmin = await t.app.inject({
      method: 'POST',
      url,
      headers: elevated(admin.token, adminElevation),
      payload: { identityId: plain.person.identityId },
    });
    expectProblem(byAdmin, 403, 'organization.permission_denied');

    const elevation = await elevate(t, owner.token, owner.person.email);
    const headers = elevated(owner.token, elevation);
    const toStranger = await t.app.inject({
      method: 'POST',
      url,
      headers,
      payload: { identityId: randomUUID() },
    });
    expectProblem(toStranger, 404, 'organization.member_not_found');
    const done = await t.app.inject({
      method: 'POST',
      url,
      headers,
      payload: { identityId: plain.person.identityId },
    });
    expect(done.statusCode, done.body).toBe(201);
    expect(done.json().data).toEqual({ identityId: plain.person.identityId, role: 'owner' });
    const now = await roles(owner.token, id);
    expect(now[plain.person.identityId]).toBe('owner');
    expect(now[owner.person.identityId]).toBe('admin');
    expect(await auditCount(t, 'organization.ownership.transferred', plain.person.identityId)).toBe(1);
    // The former owner is an admin now: no second transfer.
    const again = await t.app.inject({
      method: 'POST',
      url,
      headers,
      payload: { identityId: admin.person.identityId },
    });
    expectProblem(again, 403, 'organization.permission_denied');
  });
});
