import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';

/*
 * Issue 46, item 3: the identity's name (migration 0029): PATCH /account sets, trims and clears it,
 * refuses a malformed one whole (400, nothing written), audits and tells a change once, and every
 * view of the identity shows it (GET /account, the export, the admin list and detail, the event).
 */

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

const address = (label: string) => `${label}-${randomBytes(5).toString('hex')}@example.com`;

async function person() {
  const p = await createPerson(t.ctx, address('name'));
  const grant = await signIn(t.app, p);
  const patch = (payload: Record<string, unknown>) =>
    t.app.inject({ method: 'PATCH', url: '/api/v1/account', headers: bearer(grant.accessToken), payload });
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: bearer(grant.accessToken) });
  const row = () =>
    t.ctx.database.db
      .selectFrom('identities')
      .select(['given_name', 'family_name', 'display_name', 'locale'])
      .where('id', '=', p.identityId)
      .executeTakeFirstOrThrow();
  const updates = async () =>
    (
      await t.ctx.database.db
        .selectFrom('events')
        .select('data')
        .where('identity_id', '=', p.identityId)
        .where('type', '=', 'identity.updated')
        .execute()
    ).map((e) => e.data as Record<string, unknown>);
  return { ...p, grant, patch, get, row, updates };
}

describe('PATCH /account: the name', () => {
  it('sets the names trimmed, shows them in every view, and audits and tells a change once', async () => {
    const p = await person();
    const fresh = (await p.get('/api/v1/account')).json().data;
    expect(fresh).toMatchObject({ givenName: null, familyName: null, displayName: null, name: null });

    const res = await p.patch({ givenName: '  Ada ', familyName: 'Lovelace' });
    expect(res.statusCode, res.body).toBe(200);
    const names = { givenName: 'Ada', familyName: 'Lovelace', displayName: null, name: 'Ada Lovelace' };
    expect(res.json().data).toMatchObject(names);
    expect(await p.row()).toMatchObject({ given_name: 'Ada', family_name: 'Lovelace', display_name: null });
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(1);
    const audit = await t.ctx.database.db
      .selectFrom('audit_records')
      .select('details')
      .where('name', '=', 'identity.profile.changed')
      .where('target', '=', p.identityId)
      .executeTakeFirstOrThrow();
    // Which fields changed, never their text.
    expect(JSON.stringify(audit.details)).not.toContain('Lovelace');
    expect(audit.details).toMatchObject({ fields: 'givenName familyName' });
    expect(await p.updates()).toEqual([expect.objectContaining(names)]);

    // The same name again (trimmed or not) writes nothing.
    expect((await p.patch({ givenName: 'Ada', familyName: ' Lovelace' })).statusCode).toBe(200);
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(1);
    expect(await p.updates()).toHaveLength(1);

    // The display name is what applications are shown.
    const shown = await p.patch({ displayName: 'Countess of Lovelace' });
    expect(shown.json().data).toMatchObject({
      displayName: 'Countess of Lovelace',
      name: 'Countess of Lovelace',
    });
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(2);

    // Every view shows the same.
    const all = { givenName: 'Ada', familyName: 'Lovelace', displayName: 'Countess of Lovelace' };
    expect((await p.get('/api/v1/account')).json().data).toMatchObject(all);
    expect((await p.get('/api/v1/account/export')).json().data.identity).toMatchObject(all);
    const detail = await adminRequest(t.admin!, 'GET', `/identities/${p.identityId}`);
    expect(detail.json().data).toMatchObject({ ...all, name: 'Countess of Lovelace' });
    const list = await adminRequest(
      t.admin!,
      'GET',
      `/identities?identifierType=email&identifier=${encodeURIComponent(p.email)}`,
    );
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().data.find((i: { id: string }) => i.id === p.identityId)).toMatchObject(all);
  });

  it('clears a name with null or an empty string; an absent one stays', async () => {
    const p = await person();
    expect(
      (await p.patch({ givenName: 'Grace', familyName: 'Hopper', displayName: 'Amazing Grace' })).statusCode,
    ).toBe(200);
    const cleared = await p.patch({ displayName: null, givenName: '   ' });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json().data).toMatchObject({
      givenName: null,
      familyName: 'Hopper',
      displayName: null,
      name: 'Hopper',
    });
    expect(await p.row()).toMatchObject({ given_name: null, family_name: 'Hopper', display_name: null });
    expect((await p.patch({ familyName: '' })).json().data.name).toBeNull();
    expect(await p.updates()).toHaveLength(3);
  });

  it('takes 100 characters (counted as code points, as the database counts them)', async () => {
    const p = await person();
    const emoji = '😀'.repeat(100);
    const res = await p.patch({ displayName: emoji, givenName: 'é'.repeat(100) });
    expect(res.statusCode, res.body).toBe(200);
    expect((await p.row()).display_name).toBe(emoji);
  });

  it.each([
    ['too long', { givenName: 'x'.repeat(101) }],
    ['a line break', { familyName: 'Love\nlace' }],
    ['a tab', { displayName: 'Ada\tL' }],
    ['a NUL', { givenName: 'Ada\u0000' }],
    ['a C1 control', { givenName: 'Ada\u0085' }],
    ['a right-to-left override', { displayName: 'Ada\u202eecalevol' }],
    ['a line separator', { displayName: 'Ada\u2028L' }],
    ['a number', { givenName: 42 }],
    ['an object', { familyName: { text: 'Lovelace' } }],
    ['a field of its own', { middleName: 'Byron' }],
  ])('refuses %s whole: 400 Problem, nothing written', async (_, body) => {
    const p = await person();
    expect((await p.patch({ givenName: 'Ada', familyName: 'King' })).statusCode).toBe(200);
    const before = await p.row();
    // With a valid language beside it: nothing of the request is kept.
    const res = await p.patch({ locale: 'fr', displayName: 'Valid', ...body });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().code).toBe('validation.failed');
    expect(await p.row()).toEqual(before);
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(1);
    expect(await p.updates()).toHaveLength(1);
  });

  it('the database refuses a name the API would (migration 0029 CHECKs)', async () => {
    const p = await person();
    for (const bad of ['', 'x'.repeat(101), 'a\u0007b', 'a\u202eb']) {
      await expect(
        t.ctx.database.db
          .updateTable('identities')
          .set({ given_name: bad })
          .where('id', '=', p.identityId)
          .execute(),
      ).rejects.toThrow(/identities_given_name_shape/);
    }
  });

  it('answers 401 without a session', async () => {
    const res = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/account',
      payload: { givenName: 'Ada' },
    });
    expect(res.statusCode).toBe(401);
  });
});
