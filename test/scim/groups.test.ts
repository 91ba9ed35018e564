import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { call, member, ORGS } from '../organizations/support.js';
import { CONTEXT } from '../sessions/support.js';
import {
  createUser,
  expectScimError,
  GROUP_SCHEMA,
  PATCH_SCHEMA,
  scim,
  type Tenant,
  tenant,
} from './support.js';

// Issue 48, item 3: SCIM Groups, their members in batches, and the organization's group → role mapping.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ admin: true, server: !!process.env.TEST_DATABASE_URL });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

async function ok(res: Promise<{ statusCode: number; body: string }>) {
  const r = await res;
  expect(r.statusCode, r.body).toBeLessThan(300);
  return r;
}

const patch = (...Operations: unknown[]) => ({ schemas: [PATCH_SCHEMA], Operations });
const memberIds = (g: { members: { value: string }[] }) => g.members.map((m) => m.value).sort();

async function role(orgId: string, identityId: string) {
  const r = await t.ctx.database.db
    .selectFrom('organization_memberships')
    .select('role')
    .where('organization_id', '=', orgId)
    .where('identity_id', '=', identityId)
    .executeTakeFirst();
  return r?.role;
}

/** `n` SCIM users of the organization written straight to the database (a large directory). */
async function manyUsers(tn: Tenant, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  const now = t.clock.now();
  await t.ctx.database.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('identities')
      .values(ids.map((id) => ({ id, created_at: now })))
      .execute();
    await trx
      .insertInto('organization_memberships')
      .values(
        ids.map((identity_id) => ({
          organization_id: tn.orgId,
          identity_id,
          role: 'member',
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
    await trx
      .insertInto('scim_users')
      .values(
        ids.map((identity_id, i) => ({
          organization_id: tn.orgId,
          identity_id,
          user_name: `bulk${i}-${identity_id.slice(0, 8)}@${tn.domain}`,
          managed: true,
          role: 'member',
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
  });
  return ids;
}

describe('groups', () => {
  it('creates a group with members, filters by displayName, renames, adds and removes members; audited', async () => {
    const tn = await tenant(t);
    const a = await createUser(t, tn);
    const b = await createUser(t, tn);
    const created = await scim(t.app, 'POST', '/Groups', tn.token, {
      schemas: [GROUP_SCHEMA],
      displayName: 'Engineering',
      externalId: 'eng-1',
      members: [{ value: a.id }],
    });
    expect(created.statusCode, created.body).toBe(201);
    const g = created.json();
    expect(created.headers.location).toMatch(new RegExp(`/scim/v2/Groups/${g.id}$`));
    expect(g).toMatchObject({
      displayName: 'Engineering',
      externalId: 'eng-1',
      meta: { resourceType: 'Group', version: 'W/"1"' },
    });
    expect(g.members).toEqual([
      { value: a.id, display: a.userName, $ref: expect.stringMatching(/\/Users\//) },
    ]);
    const user = await scim(t.app, 'GET', `/Users/${a.id}`, tn.token);
    expect(user.json().groups).toEqual([{ value: g.id, display: 'Engineering', $ref: expect.any(String) }]);

    const found = await scim(
      t.app,
      'GET',
      `/Groups?filter=${encodeURIComponent('displayName eq "engineering"')}&excludedAttributes=members`,
      tn.token,
    );
    expect(found.json().totalResults).toBe(1);
    expect(found.json().Resources[0]).not.toHaveProperty('members');
    const byMember = await scim(
      t.app,
      'GET',
      `/Groups?filter=${encodeURIComponent(`members[value eq "${a.id}"]`)}`,
      tn.token,
    );
    expect(byMember.json().totalResults).toBe(1);

    const added = await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'add', path: 'members', value: [{ value: b.id }] }),
    );
    expect(memberIds(added.json())).toEqual([a.id, b.id].sort());
    const removed = await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'remove', path: `members[value eq "${a.id}"]` }),
    );
    expect(memberIds(removed.json())).toEqual([b.id]);
    const renamed = await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'replace', value: { id: g.id, displayName: 'Eng' } }),
    );
    expect(renamed.json()).toMatchObject({ displayName: 'Eng', meta: { version: 'W/"4"' } });
    expect(memberIds(renamed.json())).toEqual([b.id]);
    expect(await auditCount(t, 'organization.scim.group.updated', g.id)).toBe(3);

    const taken = await scim(t.app, 'POST', '/Groups', tn.token, { displayName: 'ENG' });
    expectScimError(taken, 409, 'uniqueness');
    const stale = await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'replace', path: 'displayName', value: 'X' }),
      { 'if-match': 'W/"1"' },
    );
    expectScimError(stale, 412);
    const unknown = await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'add', path: 'members', value: [{ value: randomUUID() }] }),
    );
    expectScimError(unknown, 400, 'noTarget');
    const badPath = await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'remove', path: 'members[display eq "x"]' }),
    );
    expectScimError(badPath, 400, 'invalidPath');

    expect((await scim(t.app, 'DELETE', `/Groups/${g.id}`, tn.token)).statusCode).toBe(204);
    expectScimError(await scim(t.app, 'GET', `/Groups/${g.id}`, tn.token), 404);
    expect((await scim(t.app, 'GET', `/Users/${b.id}`, tn.token)).json().groups).toEqual([]);
  });

  it('adds 1,000 members in one PATCH and removes them in another', async () => {
    const tn = await tenant(t);
    const ids = await manyUsers(tn, 1000);
    const created = await scim(t.app, 'POST', '/Groups', tn.token, { displayName: 'Everyone' });
    const id = created.json().id;
    const add = await scim(
      t.app,
      'PATCH',
      `/Groups/${id}`,
      tn.token,
      patch({ op: 'add', path: 'members', value: ids.map((value) => ({ value })) }),
    );
    expect(add.statusCode, add.body.slice(0, 300)).toBe(200);
    expect(add.json().members).toHaveLength(1000);
    const remove = await scim(
      t.app,
      'PATCH',
      `/Groups/${id}`,
      tn.token,
      patch({
        op: 'Remove',
        path: 'members',
        value: ids.slice(0, 999).map((value) => ({ $ref: null, value })),
      }),
    );
    expect(remove.statusCode).toBe(200);
    expect(memberIds(remove.json())).toEqual([ids[999]]);
  }, 120_000);

  it('a group mapped to a role gives it to its members, and leaving it gives member back; owners are never changed', async () => {
    const tn = await tenant(t);
    const map = await call(t.app, 'PUT', `${ORGS}/${tn.orgId}/scim-group-roles`, tn.owner.token, {
      groupKey: 'Admins',
      role: 'admin',
    });
    expect(map.statusCode, map.body).toBe(200);
    expect(map.json().data).toEqual([{ groupKey: 'Admins', role: 'admin' }]);
    const ownerMap = await call(t.app, 'PUT', `${ORGS}/${tn.orgId}/scim-group-roles`, tn.owner.token, {
      groupKey: 'Owners',
      role: 'owner',
    });
    expect(ownerMap.json().code).toBe('organization.role_unknown');
    const u = await createUser(t, tn);
    const g = (
      await scim(t.app, 'POST', '/Groups', tn.token, { displayName: 'admins', members: [{ value: u.id }] })
    ).json();
    expect(await role(tn.orgId, u.id)).toBe('admin');
    await scim(t.app, 'PATCH', `/Groups/${g.id}`, tn.token, patch({ op: 'remove', path: 'members' }));
    expect(await role(tn.orgId, u.id)).toBe('member');
    // The owner, provisioned and pushed into the group, stays owner.
    const owner = await scim(t.app, 'POST', '/Users', tn.token, {
      userName: tn.owner.person.email,
      emails: [{ value: tn.owner.person.email }],
    });
    expect(owner.statusCode, owner.body).toBe(201);
    await scim(
      t.app,
      'PATCH',
      `/Groups/${g.id}`,
      tn.token,
      patch({ op: 'add', path: 'members', value: [{ value: owner.json().id }] }),
    );
    expect(await role(tn.orgId, tn.owner.person.identityId)).toBe('owner');
  });
});

describe('plain groups', () => {
  it('are listed by name in the session context; a group mapped to a role is not', async () => {
    const tn = await tenant(t);
    const person = await member(t);
    const u = await scim(t.app, 'POST', '/Users', tn.token, {
      userName: person.person.email,
      emails: [{ value: person.person.email }],
    });
    expect(u.statusCode, u.body).toBe(201);
    await ok(
      call(t.app, 'PUT', `${ORGS}/${tn.orgId}/scim-group-roles`, tn.owner.token, {
        groupKey: 'Admins',
        role: 'admin',
      }),
    );
    for (const displayName of ['Zeta', 'alpha', 'Admins'])
      await ok(
        scim(t.app, 'POST', '/Groups', tn.token, {
          displayName,
          members: [{ value: person.person.identityId }],
        }),
      );
    const ctx = await call(t.app, 'GET', CONTEXT, person.token);
    const here = ctx.json().data.organizations.find((o: { id: string }) => o.id === tn.orgId);
    expect(here).toMatchObject({ role: 'admin', groups: ['alpha', 'Zeta'] });
  });
});

describe("Okta's provisioning sequence, request by request", () => {
  it('create, get by filter, update, deactivate, reactivate, group push, delete', async () => {
    const tn = await tenant(t);
    const userName = `dade.murphy@${tn.domain}`;
    // 1. Does the user exist?
    const lookup = await scim(
      t.app,
      'GET',
      `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
      tn.token,
    );
    expect(lookup.json()).toMatchObject({ totalResults: 0, Resources: [] });
    // 2. Create (Okta's body, password included and ignored).
    const create = await scim(t.app, 'POST', '/Users', tn.token, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName,
      name: { givenName: 'Dade', familyName: 'Murphy' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      displayName: 'Dade Murphy',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    });
    expect(create.statusCode, create.body).toBe(201);
    const id = create.json().id;
    // 3. Read it back, then by filter.
    expect((await scim(t.app, 'GET', `/Users/${id}`, tn.token)).json().userName).toBe(userName);
    const again = await scim(
      t.app,
      'GET',
      `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
      tn.token,
    );
    expect(again.json().Resources.map((r: { id: string }) => r.id)).toEqual([id]);
    // 4. Profile update (PUT of the whole user).
    const put = await scim(t.app, 'PUT', `/Users/${id}`, tn.token, {
      ...(create.json() as Record<string, unknown>),
      name: { givenName: 'Dade', familyName: 'Murphy-Burn' },
    });
    expect(put.json().name.familyName).toBe('Murphy-Burn');
    // 5. Deactivate, 6. reactivate (path-less replace).
    const off = await scim(
      t.app,
      'PATCH',
      `/Users/${id}`,
      tn.token,
      patch({ op: 'replace', value: { active: false } }),
    );
    expect(off.json().active).toBe(false);
    expect(await role(tn.orgId, id)).toBeUndefined();
    const on = await scim(
      t.app,
      'PATCH',
      `/Users/${id}`,
      tn.token,
      patch({ op: 'replace', value: { active: true } }),
    );
    expect(on.json().active).toBe(true);
    expect(await role(tn.orgId, id)).toBe('member');
    // 7. Group push: create, rename, add member, remove member, delete.
    const group = await scim(t.app, 'POST', '/Groups', tn.token, {
      schemas: [GROUP_SCHEMA],
      displayName: 'Test SCIMv2',
      members: [],
    });
    const gid = group.json().id;
    await scim(
      t.app,
      'PATCH',
      `/Groups/${gid}`,
      tn.token,
      patch({ op: 'replace', value: { id: gid, displayName: 'Test SCIMv2 renamed' } }),
    );
    const add = await scim(
      t.app,
      'PATCH',
      `/Groups/${gid}`,
      tn.token,
      patch({ op: 'add', path: 'members', value: [{ value: id, display: userName }] }),
    );
    expect(memberIds(add.json())).toEqual([id]);
    const rm = await scim(
      t.app,
      'PATCH',
      `/Groups/${gid}`,
      tn.token,
      patch({ op: 'remove', path: `members[value eq "${id}"]` }),
    );
    expect(rm.json().members).toEqual([]);
    expect((await scim(t.app, 'DELETE', `/Groups/${gid}`, tn.token)).statusCode).toBe(204);
    // 8. Delete the user.
    expect((await scim(t.app, 'DELETE', `/Users/${id}`, tn.token)).statusCode).toBe(204);
    expectScimError(await scim(t.app, 'GET', `/Users/${id}`, tn.token), 404);
  });
});

describe("Entra ID's provisioning sequence, request by request", () => {
  it('create, get by filter, patch attributes and manager, disable, enable, group push, delete', async () => {
    const tn = await tenant(t);
    const userName = `Test_User_${randomUUID().slice(0, 8)}@${tn.domain}`;
    const lookup = await scim(
      t.app,
      'GET',
      `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`,
      tn.token,
    );
    expect(lookup.json().totalResults).toBe(0);
    const create = await scim(t.app, 'POST', '/Users', tn.token, {
      schemas: [
        'urn:ietf:params:scim:schemas:core:2.0:User',
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
      ],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: userName }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
    });
    expect(create.statusCode, create.body).toBe(201);
    const id = create.json().id;
    const byName = await scim(
      t.app,
      'GET',
      `/Users?filter=${encodeURIComponent(`userName eq "${userName.toLowerCase()}"`)}`,
      tn.token,
    );
    expect(byName.json().totalResults).toBe(1);
    const byExternal = await scim(
      t.app,
      'GET',
      `/Users?filter=${encodeURIComponent('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`,
      tn.token,
    );
    expect(byExternal.json().Resources[0].id).toBe(id);
    const updated = `updated_${userName}`;
    const attrs = await scim(
      t.app,
      'PATCH',
      `/Users/${id}`,
      tn.token,
      patch(
        { op: 'Replace', path: 'emails[type eq "work"].value', value: updated },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ),
    );
    expect(attrs.statusCode, attrs.body).toBe(200);
    expect(attrs.json().emails).toEqual([{ primary: true, type: 'work', value: updated }]);
    const identifiers = await t.ctx.database.db
      .selectFrom('identifiers')
      .select(['value', 'verified_at'])
      .where('identity_id', '=', id)
      .where('removed_at', 'is', null)
      .execute();
    expect(identifiers.map((i) => i.value)).toEqual([updated.toLowerCase()]);
    const manager = await scim(
      t.app,
      'PATCH',
      `/Users/${id}`,
      tn.token,
      patch({
        op: 'Add',
        path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager',
        value: '2819c223-7f76-453a-919d-ab1234567891',
      }),
    );
    expect(manager.json()['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User']).toEqual({
      manager: { value: '2819c223-7f76-453a-919d-ab1234567891' },
    });
    const disable = await scim(
      t.app,
      'PATCH',
      `/Users/${id}`,
      tn.token,
      patch({ op: 'Replace', path: 'active', value: 'False' }),
    );
    expect(disable.json().active).toBe(false);
    const enable = await scim(
      t.app,
      'PATCH',
      `/Users/${id}`,
      tn.token,
      patch({ op: 'Replace', path: 'active', value: 'True' }),
    );
    expect(enable.json().active).toBe(true);
    // Groups: create, find by displayName without members, add and remove a member, delete.
    const group = await scim(t.app, 'POST', '/Groups', tn.token, {
      schemas: [GROUP_SCHEMA],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    });
    const gid = group.json().id;
    const find = await scim(
      t.app,
      'GET',
      `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "displayName"')}`,
      tn.token,
    );
    expect(find.json().Resources.map((r: { id: string }) => r.id)).toEqual([gid]);
    const add = await scim(
      t.app,
      'PATCH',
      `/Groups/${gid}`,
      tn.token,
      patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: id }] }),
    );
    expect(memberIds(add.json())).toEqual([id]);
    const remove = await scim(
      t.app,
      'PATCH',
      `/Groups/${gid}`,
      tn.token,
      patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: id }] }),
    );
    expect(remove.json().members).toEqual([]);
    expect((await scim(t.app, 'DELETE', `/Groups/${gid}`, tn.token)).statusCode).toBe(204);
    expect((await scim(t.app, 'DELETE', `/Users/${id}`, tn.token)).statusCode).toBe(204);
    expectScimError(await scim(t.app, 'GET', `/Users/${id}`, tn.token), 404);
    const erased = await t.ctx.database.db
      .selectFrom('identities')
      .select('erased_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(erased.erased_at).not.toBeNull();
  });
});

describe('discovery', () => {
  it('tells what is supported: patch, filter with maxResults, etag; no bulk, sort or password change', async () => {
    const tn = await tenant(t);
    const spc = await scim(t.app, 'GET', '/ServiceProviderConfig', tn.token);
    expect(spc.headers['content-type']).toMatch(/^application\/scim\+json/);
    expect(spc.json()).toMatchObject({
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 200 },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
    });
    const types = await scim(t.app, 'GET', '/ResourceTypes', tn.token);
    expect(types.json().Resources.map((r: { id: string }) => r.id)).toEqual(['User', 'Group']);
    expect((await scim(t.app, 'GET', '/ResourceTypes/User', tn.token)).json().schemaExtensions).toEqual([
      { schema: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', required: false },
    ]);
    const schemas = await scim(t.app, 'GET', '/Schemas', tn.token);
    const enterprise = schemas.json().Resources.find((s: { name: string }) => s.name === 'EnterpriseUser');
    expect(enterprise.attributes.map((a: { name: string }) => a.name)).toEqual([
      'employeeNumber',
      'department',
      'manager',
    ]);
    expect(
      (
        await scim(
          t.app,
          'GET',
          `/Schemas/${encodeURIComponent('urn:ietf:params:scim:schemas:core:2.0:Group')}`,
          tn.token,
        )
      ).json().name,
    ).toBe('Group');
    expectScimError(await scim(t.app, 'GET', '/Schemas/nope', tn.token), 404);
    expectScimError(await scim(t.app, 'GET', '/Bulk', tn.token), 404);
  });
});
