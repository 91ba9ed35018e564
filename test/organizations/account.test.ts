import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { call, createOrganization, expectProblem, join, member, ORGS, switchTo } from './support.js';

// Memberships in the owner's export, and in an operator's erasure.
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

async function count(table: 'organizations' | 'organization_memberships', column: string, id: string) {
  const r = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE ${sql.ref(column)} = ${id}`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].n;
}

function erase(identityId: string) {
  if (!t.admin) throw new Error('no admin listener');
  return adminRequest(t.admin, 'POST', `/identities/${identityId}/erasures`);
}

describe('export', () => {
  it('GET /account/export lists every membership with its role', async () => {
    const me = await member(t);
    const other = await member(t);
    const mine = await createOrganization(t, me.token, 'Mine');
    t.clock.advance(1);
    const theirs = await createOrganization(t, other.token, 'Theirs');
    await join(t, theirs.id, me.person.identityId, 'member');
    const res = await call(t.app, 'GET', '/api/v1/account/export', me.token);
    expect(res.statusCode, res.body).toBe(200);
    const orgs = res.json().data.organizations as Array<Record<string, unknown>>;
    expect(orgs.map((o) => [o.id, o.name, o.slug, o.role])).toEqual([
      [mine.id, 'Mine', mine.slug, 'owner'],
      [theirs.id, 'Theirs', theirs.slug, 'member'],
    ]);
    expect(orgs[0].joinedAt).toEqual(expect.any(String));
  });
});

describe('erasure', () => {
  it('is refused with 409 organization.last_owner_erasure while the last owner of an organization with other members', async () => {
    const owner = await member(t);
    const other = await member(t);
    const org = await createOrganization(t, owner.token);
    await join(t, org.id, other.person.identityId, 'admin');
    expectProblem(await erase(owner.person.identityId), 409, 'organization.last_owner_erasure');
    // Nothing was erased: the owner still signs in and still owns it.
    expect((await call(t.app, 'GET', `${ORGS}/${org.id}`, owner.token)).json().data.role).toBe('owner');
    // With a second owner, the erasure goes through and the organization stays with them.
    await sql`UPDATE organization_memberships SET role = 'owner' WHERE identity_id = ${other.person.identityId}`.execute(
      t.ctx.database.db,
    );
    expect((await erase(owner.person.identityId)).statusCode).toBe(204);
    expect(await count('organization_memberships', 'identity_id', owner.person.identityId)).toBe(0);
    expect(await count('organizations', 'id', org.id)).toBe(1);
  });

  it('removes memberships, deletes an organization the identity was alone in, and clears the active one', async () => {
    const me = await member(t);
    const other = await member(t);
    const solo = await createOrganization(t, me.token, 'Solo');
    const shared = await createOrganization(t, other.token, 'Shared');
    await join(t, shared.id, me.person.identityId, 'admin');
    expect((await switchTo(t.app, me.token, shared.id)).statusCode).toBe(200);

    const res = await erase(me.person.identityId);
    expect(res.statusCode, res.body).toBe(204);
    expect(await count('organizations', 'id', solo.id)).toBe(0);
    expect(await count('organization_memberships', 'identity_id', me.person.identityId)).toBe(0);
    expect(await count('organization_memberships', 'organization_id', shared.id)).toBe(1);
    const active = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sessions
      WHERE identity_id = ${me.person.identityId} AND active_organization_id IS NOT NULL`.execute(
      t.ctx.database.db,
    );
    expect(active.rows[0].n).toBe(0);
  });
});
