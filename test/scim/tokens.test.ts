import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/platform/crypto/tokens.js';
import { ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { call, createOrganization, join, member, ORGS } from '../organizations/support.js';
import { createUser, expectScimError, newUser, PATCH_SCHEMA, scim, tenant } from './support.js';

// Issue 48, item 1: SCIM tokens, and a token of one organization reaching nothing of another.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ admin: true, server: !!process.env.TEST_DATABASE_URL });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const adm = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
  t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });

describe('SCIM tokens', () => {
  it('an owner creates one, shown once and stored as its hash only; listed without it; audited', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/scim-tokens`, owner.token, { name: ' Okta ' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const data = res.json().data;
    expect(data).toMatchObject({
      organizationId: org.id,
      name: 'Okta',
      createdBy: owner.person.identityId,
      revokedAt: null,
      lastUsedAt: null,
    });
    expect(data.token).toMatch(/^scim_[A-Za-z0-9_-]{43}$/);
    const row = await t.ctx.database.db
      .selectFrom('scim_tokens')
      .selectAll()
      .where('id', '=', data.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(sha256Hex(data.token));
    expect(JSON.stringify(row)).not.toContain(data.token);
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/scim-tokens`, owner.token);
    expect(list.statusCode).toBe(200);
    expect(list.json().data).toHaveLength(1);
    expect(list.body).not.toContain(data.token);
    expect(list.json().data[0]).not.toHaveProperty('token');
    expect(await auditCount(t, 'organization.scim_token.created', data.id)).toBe(1);
    expect(t.logs()).not.toContain(data.token);

    // Its use is recorded (to the minute), and the first request works.
    const used = await scim(t.app, 'GET', '/Users', data.token);
    expect(used.statusCode).toBe(200);
    const after = await call(t.app, 'GET', `${ORGS}/${org.id}/scim-tokens`, owner.token);
    expect(after.json().data[0].lastUsedAt).toBe(t.clock.now().toISOString());

    // Revoked: refused at once, and a second revocation answers 404.
    const revoke = await call(t.app, 'DELETE', `${ORGS}/${org.id}/scim-tokens/${data.id}`, owner.token);
    expect(revoke.statusCode).toBe(204);
    expectScimError(await scim(t.app, 'GET', '/Users', data.token), 401);
    const again = await call(t.app, 'DELETE', `${ORGS}/${org.id}/scim-tokens/${data.id}`, owner.token);
    expect(again.json().code).toBe('organization.scim_token_not_found');
    expect(await auditCount(t, 'organization.scim_token.revoked', data.id)).toBe(1);
  });

  it('needs directory:manage: an admin gets 403, a stranger 404', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const admin = await member(t);
    await join(t, org.id, admin.person.identityId, 'admin');
    const stranger = await member(t);
    const byAdmin = await call(t.app, 'POST', `${ORGS}/${org.id}/scim-tokens`, admin.token, { name: 'x' });
    expect([byAdmin.statusCode, byAdmin.json().code]).toEqual([403, 'organization.permission_denied']);
    const byStranger = await call(t.app, 'GET', `${ORGS}/${org.id}/scim-tokens`, stranger.token);
    expect([byStranger.statusCode, byStranger.json().code]).toEqual([404, 'organization.not_found']);
    const bad = await call(t.app, 'POST', `${ORGS}/${org.id}/scim-tokens`, owner.token, {
      name: 'x',
      extra: 1,
    });
    expect(bad.statusCode).toBe(400);
  });

  it('an operator creates, lists and revokes one on the admin API (audited with the operator)', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const created = await adm('POST', `/organizations/${org.id}/scim-tokens`, { name: 'Entra ID' });
    expect(created.statusCode, created.body).toBe(201);
    const { id, token, createdBy } = created.json().data;
    expect(createdBy).toBe('admin:ops');
    expect((await scim(t.app, 'GET', '/ServiceProviderConfig', token)).statusCode).toBe(200);
    const list = await adm('GET', `/organizations/${org.id}/scim-tokens`);
    expect(list.json().data.map((x: { id: string }) => x.id)).toEqual([id]);
    expect((await adm('DELETE', `/organizations/${org.id}/scim-tokens/${id}`)).statusCode).toBe(204);
    expectScimError(await scim(t.app, 'GET', '/Users', token), 401);
    const unknown = await adm('POST', '/organizations/00000000-0000-4000-8000-000000000000/scim-tokens', {
      name: 'x',
    });
    expect(unknown.json().code).toBe('admin.organization_not_found');
  });

  it.each([
    ['no header', {}],
    ['another scheme', { authorization: 'Basic Zm9vOmJhcg==' }],
    ['a made-up token', { authorization: `Bearer scim_${'A'.repeat(43)}` }],
    ['a session token', { authorization: 'Bearer eyJhbGciOiJFZERTQSJ9.e30.x' }],
  ])('refuses %s with 401 in the SCIM error schema', async (_what, headers) => {
    const res = await t.app.inject({ method: 'GET', url: '/scim/v2/Users', headers });
    expectScimError(res, 401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="scim"');
  });

  it('a disabled organization’s token stops working', async () => {
    const tn = await tenant(t);
    await t.ctx.database.db
      .updateTable('organizations')
      .set({ disabled_at: t.clock.now() })
      .where('id', '=', tn.orgId)
      .execute();
    expectScimError(await scim(t.app, 'GET', '/Users', tn.token), 401);
  });
});

describe('one organization sees nothing of another', () => {
  it('reads, lists, writes and deletes of another organization’s users and groups find nothing', async () => {
    const a = await tenant(t);
    const b = await tenant(t);
    const ua = await createUser(t, a);
    const group = await scim(t.app, 'POST', '/Groups', a.token, {
      displayName: 'Staff',
      members: [{ value: ua.id }],
    });
    expect(group.statusCode, group.body).toBe(201);
    const ga = group.json().id as string;

    expect((await scim(t.app, 'GET', '/Users', b.token)).json().totalResults).toBe(0);
    expect(
      (
        await scim(
          t.app,
          'GET',
          `/Users?filter=${encodeURIComponent(`userName eq "${ua.userName}"`)}`,
          b.token,
        )
      ).json().totalResults,
    ).toBe(0);
    expect((await scim(t.app, 'GET', '/Groups', b.token)).json().totalResults).toBe(0);
    expectScimError(await scim(t.app, 'GET', `/Users/${ua.id}`, b.token), 404);
    expectScimError(await scim(t.app, 'PUT', `/Users/${ua.id}`, b.token, newUser(b.domain)), 404);
    expectScimError(
      await scim(t.app, 'PATCH', `/Users/${ua.id}`, b.token, {
        schemas: [PATCH_SCHEMA],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      }),
      404,
    );
    expectScimError(await scim(t.app, 'DELETE', `/Users/${ua.id}`, b.token), 404);
    expectScimError(await scim(t.app, 'GET', `/Groups/${ga}`, b.token), 404);
    expectScimError(await scim(t.app, 'DELETE', `/Groups/${ga}`, b.token), 404);
    // B's group cannot take A's user as a member.
    const steal = await scim(t.app, 'POST', '/Groups', b.token, {
      displayName: 'Staff',
      members: [{ value: ua.id }],
    });
    expectScimError(steal, 400, 'noTarget');
    // A's user is untouched.
    const still = await scim(t.app, 'GET', `/Users/${ua.id}`, a.token);
    expect(still.json()).toMatchObject({ active: true, meta: { version: 'W/"1"' } });
    // The same person may be provisioned by both: two SCIM users, one identity.
    const both = await scim(
      t.app,
      'POST',
      '/Users',
      b.token,
      newUser(b.domain, { userName: ua.userName, emails: [{ value: ua.userName }] }),
    );
    expect(both.statusCode, both.body).toBe(201);
    expect(both.json().id).toBe(ua.id);
    expect((await scim(t.app, 'GET', `/Users/${ua.id}`, b.token)).statusCode).toBe(200);
  });
});
