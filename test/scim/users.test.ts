import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { createPerson } from '../helpers/identities.js';
import { waitForCode } from '../helpers/outbox.js';
import { confirm, PASSWORD, signUp } from '../registration/helpers.js';
import {
  createUser,
  ENTERPRISE,
  expectScimError,
  newUser,
  PATCH_SCHEMA,
  scim,
  type Tenant,
  tenant,
  USER_SCHEMA,
} from './support.js';

// Issue 48, item 2: SCIM Users of one organization, on PGlite and (TEST_DATABASE_URL) the server.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ admin: true, server: !!process.env.TEST_DATABASE_URL });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const patch = (...Operations: unknown[]) => ({ schemas: [PATCH_SCHEMA], Operations });

async function identifiersOf(identityId: string) {
  return t.ctx.database.db
    .selectFrom('identifiers')
    .select(['type', 'value', 'verified_at'])
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .execute();
}

async function membership(orgId: string, identityId: string) {
  return t.ctx.database.db
    .selectFrom('organization_memberships')
    .select('role')
    .where('organization_id', '=', orgId)
    .where('identity_id', '=', identityId)
    .executeTakeFirst();
}

async function filter(tn: Tenant, f: string, extra = '') {
  const res = await scim(t.app, 'GET', `/Users?filter=${encodeURIComponent(f)}${extra}`, tn.token);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { totalResults: number; Resources: { id: string; userName: string }[] };
}

describe('creating users', () => {
  it('creates a member: the address verified in a domain the organization verified; audited and evented', async () => {
    const tn = await tenant(t);
    const u = await createUser(t, tn, {
      [ENTERPRISE]: { employeeNumber: '42', department: 'R&D', manager: { value: 'boss-1' } },
      schemas: [USER_SCHEMA, ENTERPRISE],
    });
    expect(u.userName).toMatch(new RegExp(`@${tn.domain}$`));
    expect(u.meta.version).toBe('W/"1"');
    expect(u[ENTERPRISE]).toEqual({ employeeNumber: '42', department: 'R&D', manager: { value: 'boss-1' } });
    expect(u).not.toHaveProperty('password');
    const ids = await identifiersOf(u.id);
    expect(ids).toHaveLength(1);
    expect(ids[0].value).toBe(u.userName);
    expect(ids[0].verified_at).not.toBeNull();
    expect(await membership(tn.orgId, u.id)).toEqual({ role: 'member' });
    expect(await auditCount(t, 'organization.scim.user.created', { actor: 'scim:Okta' })).toBeGreaterThan(0);
    const events = await sql<{ type: string; actor: string }>`
      SELECT type, actor FROM events WHERE identity_id = ${u.id} ORDER BY appended`.execute(
      t.ctx.database.db,
    );
    expect(events.rows.map((e) => e.type)).toEqual(['identity.created', 'organization.membership.created']);
    expect(events.rows.every((e) => e.actor === 'scim:Okta')).toBe(true);
    // Its name came from the directory.
    const identity = await t.ctx.database.db
      .selectFrom('identities')
      .select(['given_name', 'family_name', 'display_name'])
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow();
    expect(identity).toEqual({ given_name: 'Ada', family_name: 'Lovelace', display_name: 'Ada Lovelace' });
  });

  it('leaves the address unverified outside a verified domain; the person confirms it by signing up', async () => {
    const tn = await tenant(t, { verified: false });
    const u = await createUser(t, tn);
    const ids = await identifiersOf(u.id);
    expect(ids[0].verified_at).toBeNull();
    // The documented way in (docs/scim.md, "Users"): a sign-up with the address and a password.
    const form = { identifierType: 'email', identifier: u.userName, password: PASSWORD };
    expect((await signUp(t.app, form)).statusCode).toBe(201);
    const code = await waitForCode(t.config.dataDir, u.userName, 1);
    const confirmed = await confirm(t.app, { ...form, code });
    expect(confirmed.statusCode, confirmed.body).toBe(204);
    const after = await identifiersOf(u.id);
    expect(after).toHaveLength(1);
    expect(after[0].verified_at).not.toBeNull();
  });

  it('an identity already holding the verified address becomes the member, not a duplicate', async () => {
    const tn = await tenant(t);
    const person = await createPerson(t.ctx, `known-${Date.now()}@${tn.domain}`);
    const body = newUser(tn.domain, {
      userName: person.email,
      emails: [{ value: person.email, primary: true }],
    });
    const res = await scim(t.app, 'POST', '/Users', tn.token, body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().id).toBe(person.identityId);
    expect(await membership(tn.orgId, person.identityId)).toEqual({ role: 'member' });
    const count = await t.ctx.database.db
      .selectFrom('identifiers')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('value', '=', person.email)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  it('answers 409 uniqueness for a userName or externalId the organization already has', async () => {
    const tn = await tenant(t);
    const u = await createUser(t, tn);
    const sameName = await scim(
      t.app,
      'POST',
      '/Users',
      tn.token,
      newUser(tn.domain, { userName: u.userName.toUpperCase() }),
    );
    expectScimError(sameName, 409, 'uniqueness');
    const sameExternal = await scim(
      t.app,
      'POST',
      '/Users',
      tn.token,
      newUser(tn.domain, { externalId: u.externalId }),
    );
    expectScimError(sameExternal, 409, 'uniqueness');
  });

  it.each([
    [{}, 'no userName'],
    [{ userName: 42 }, 'a number'],
    [{ userName: 'not-an-email' }, 'no address anywhere'],
    [{ userName: 'a@b.example.com', active: 'maybe' }, 'active not a boolean'],
    [{ userName: 'a@b.example.com', emails: 'x' }, 'emails not an array'],
    [{ userName: 'a@b.example.com', name: 'x' }, 'name not an object'],
    [{ userName: 'a\u0000@b.example.com' }, 'a NUL'],
  ] as [Record<string, unknown>, string][])('refuses %j with 400 invalidValue (%s)', async (body) => {
    const tn = await tenant(t);
    const res = await scim(t.app, 'POST', '/Users', tn.token, { schemas: [USER_SCHEMA], ...body });
    expectScimError(res, 400, 'invalidValue');
  });

  it('refuses a body that is not JSON (400 invalidSyntax) or not JSON at all (415)', async () => {
    const tn = await tenant(t);
    const broken = await t.app.inject({
      method: 'POST',
      url: '/scim/v2/Users',
      headers: { authorization: `Bearer ${tn.token}`, 'content-type': 'application/scim+json' },
      payload: '{"userName": ',
    });
    expectScimError(broken, 400, 'invalidSyntax');
    const text = await t.app.inject({
      method: 'POST',
      url: '/scim/v2/Users',
      headers: { authorization: `Bearer ${tn.token}`, 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expectScimError(text, 415, undefined);
  });
});

describe('filters and paging', () => {
  let tn: Tenant;
  const made: Record<string, { id: string; userName: string }> = {};
  let between: string;
  beforeAll(async () => {
    tn = await tenant(t);
    made.ada = await createUser(t, tn, {
      userName: `ada@${tn.domain}`,
      emails: [{ value: `ada@${tn.domain}`, type: 'work', primary: true }],
    });
    t.clock.advance(60);
    between = t.clock.now().toISOString();
    t.clock.advance(60);
    made.bob = await createUser(t, tn, {
      userName: `bob@${tn.domain}`,
      externalId: null,
      emails: [
        { value: `bob@${tn.domain}`, type: 'work', primary: true },
        { value: `bob@home.example.org`, type: 'home' },
      ],
    });
    t.clock.advance(1);
    made.cy = await createUser(t, tn, {
      userName: `cy@${tn.domain}`,
      active: false,
      emails: [{ value: `cy@${tn.domain}`, type: 'other' }],
    });
  });

  const ids = (r: { Resources: { id: string }[] }) => r.Resources.map((x) => x.id).sort();
  const of = (...names: string[]) => names.map((n) => made[n].id).sort();

  it.each([
    ['userName eq "ADA@{d}"', ['ada']],
    ['userName co "bo"', ['bob']],
    ['userName sw "c"', ['cy']],
    ['userName ew "@{d}"', ['ada', 'bob', 'cy']],
    ['userName ne "ada@{d}"', ['bob', 'cy']],
    ['externalId pr', ['ada', 'cy']],
    ['not (externalId pr)', ['bob']],
    ['emails.value eq "bob@home.example.org"', ['bob']],
    ['emails co "home.example"', ['bob']],
    ['emails[type eq "work"].value eq "bob@{d}"', ['bob']],
    ['emails[type eq "work"].value eq "bob@home.example.org"', []],
    ['emails[type eq "work" and value sw "ada"]', ['ada']],
    ['active eq false', ['cy']],
    ['active eq true and userName sw "a"', ['ada']],
    ['userName sw "a" or userName sw "b"', ['ada', 'bob']],
    ['meta.lastModified gt "{between}"', ['bob', 'cy']],
    ['meta.created lt "{between}"', ['ada']],
    ['urn:ietf:params:scim:schemas:core:2.0:User:userName eq "cy@{d}"', ['cy']],
  ])('%s', async (f, expected) => {
    const res = await filter(tn, f.replaceAll('{d}', tn.domain).replaceAll('{between}', between));
    expect(ids(res)).toEqual(of(...expected));
    expect(res.totalResults).toBe(expected.length);
  });

  it.each([
    'userName eq',
    'nope eq "x"',
    'active eq "yes"',
    'meta.lastModified gt "yesterday"',
    'emails[type eq "work"',
    'userName zz "x"',
    'emails[value eq "x"][type eq "y"]',
    'password eq "x"',
    'userName eq "a\u0000b"',
    'meta.lastModified gt "0000-01-01T00:00:00Z"',
  ])('refuses %j with 400 invalidFilter', async (f) => {
    const res = await scim(t.app, 'GET', `/Users?filter=${encodeURIComponent(f)}`, tn.token);
    expectScimError(res, 400, 'invalidFilter');
  });

  it('pages with startIndex and count, oldest first, and tells the total', async () => {
    const first = await scim(t.app, 'GET', '/Users?startIndex=1&count=2', tn.token);
    expect(first.json()).toMatchObject({ totalResults: 3, startIndex: 1, itemsPerPage: 2 });
    expect(first.json().Resources.map((r: { id: string }) => r.id)).toEqual([made.ada.id, made.bob.id]);
    const second = await scim(t.app, 'GET', '/Users?startIndex=3&count=2', tn.token);
    expect(second.json()).toMatchObject({ totalResults: 3, startIndex: 3, itemsPerPage: 1 });
    const none = await scim(t.app, 'GET', '/Users?count=0', tn.token);
    expect(none.json()).toMatchObject({ totalResults: 3, itemsPerPage: 0, Resources: [] });
    const low = await scim(t.app, 'GET', '/Users?startIndex=-5&count=1', tn.token);
    expect(low.json()).toMatchObject({ startIndex: 1, itemsPerPage: 1 });
    const far = await scim(t.app, 'GET', '/Users?startIndex=2147483647', tn.token);
    expect(far.json()).toMatchObject({ totalResults: 3, itemsPerPage: 0 });
    expectScimError(
      await scim(t.app, 'GET', '/Users?startIndex=99999999999999999999', tn.token),
      400,
      'invalidValue',
    );
  });

  it('answers only the attributes asked for, or all but the excluded ones', async () => {
    const only = await scim(
      t.app,
      'GET',
      `/Users/${made.ada.id}?attributes=userName,name.givenName`,
      tn.token,
    );
    expect(Object.keys(only.json()).sort()).toEqual(['id', 'meta', 'name', 'schemas', 'userName']);
    expect(only.json().name).toEqual({ givenName: 'Ada' });
    const without = await scim(
      t.app,
      'GET',
      `/Users/${made.ada.id}?excludedAttributes=emails,groups,id`,
      tn.token,
    );
    expect(without.json()).not.toHaveProperty('emails');
    expect(without.json()).not.toHaveProperty('groups');
    expect(without.json().id).toBe(made.ada.id);
    const list = await filter(tn, `userName eq "ada@${tn.domain}"`, '&attributes=userName');
    expect(Object.keys(list.Resources[0]).sort()).toEqual(['id', 'meta', 'schemas', 'userName']);
  });
});

describe('PATCH and PUT', () => {
  it('applies value-path filters, sub-attributes and the enterprise extension', async () => {
    const tn = await tenant(t);
    const u = await createUser(t, tn, {
      emails: [
        { value: `w@${tn.domain}`, type: 'work', primary: true },
        { value: 'h@home.example.org', type: 'home' },
      ],
    });
    const res = await scim(
      t.app,
      'PATCH',
      `/Users/${u.id}`,
      tn.token,
      patch(
        { op: 'replace', path: 'emails[type eq "home"].value', value: 'h2@home.example.org' },
        { op: 'replace', path: 'name.familyName', value: 'Byron' },
        { op: 'add', path: `${ENTERPRISE}:department`, value: 'Maths' },
        { op: 'remove', path: 'displayName' },
      ),
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.emails).toEqual([
      { value: `w@${tn.domain}`, type: 'work', primary: true },
      { value: 'h2@home.example.org', type: 'home' },
    ]);
    expect(body.name).toEqual({ givenName: 'Ada', familyName: 'Byron' });
    expect(body[ENTERPRISE]).toEqual({ department: 'Maths' });
    expect(body).not.toHaveProperty('displayName');
    expect(body.meta.version).toBe('W/"2"');
    expect(res.headers.etag).toBe('W/"2"');
    const identity = await t.ctx.database.db
      .selectFrom('identities')
      .select(['family_name', 'display_name'])
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow();
    expect(identity).toEqual({ family_name: 'Byron', display_name: null });
  });

  it('takes the Entra ID dialect: op names in any case, "False" as a string, path-less objects with dotted and URN keys', async () => {
    const tn = await tenant(t);
    const u = await createUser(t, tn);
    const res = await scim(
      t.app,
      'PATCH',
      `/Users/${u.id}`,
      tn.token,
      patch(
        { op: 'Replace', value: { 'name.givenName': 'Augusta', [`${ENTERPRISE}:employeeNumber`]: '7' } },
        { op: 'Add', path: `${ENTERPRISE}:manager`, value: 'mgr-42' },
        { op: 'REPLACE', path: 'active', value: 'False' },
      ),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      active: false,
      name: { givenName: 'Augusta' },
      [ENTERPRISE]: { employeeNumber: '7', manager: { value: 'mgr-42' } },
    });
    expect(await membership(tn.orgId, u.id)).toBeUndefined();
    const back = await scim(
      t.app,
      'PATCH',
      `/Users/${u.id}`,
      tn.token,
      patch({ op: 'replace', value: { active: 'True' } }),
    );
    expect(back.json().active).toBe(true);
    expect(await membership(tn.orgId, u.id)).toEqual({ role: 'member' });
  });

  it.each([
    [{ schemas: [PATCH_SCHEMA] }, 400, 'invalidSyntax'],
    [{ Operations: [{ op: 'replace', path: 'active', value: false }] }, 400, 'invalidSyntax'],
    [{ schemas: [PATCH_SCHEMA], Operations: [{ op: 'move', path: 'active' }] }, 400, 'invalidSyntax'],
    [{ schemas: [PATCH_SCHEMA], Operations: [{ op: 'remove' }] }, 400, 'noTarget'],
    [
      {
        schemas: [PATCH_SCHEMA],
        Operations: [{ op: 'replace', path: 'emails[type eq "nope"].value', value: 'x' }],
      },
      400,
      'noTarget',
    ],
    [
      { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'emails[[', value: 'x' }] },
      400,
      'invalidPath',
    ],
    [
      { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'id', value: 'other' }] },
      400,
      'mutability',
    ],
    [
      { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'active', value: 'nope' }] },
      400,
      'invalidValue',
    ],
    [{ schemas: [PATCH_SCHEMA], Operations: [{ op: 'remove', path: 'userName' }] }, 400, 'invalidValue'],
  ])('refuses %j with %i %s, nothing changed', async (body, status, type) => {
    const tn = await tenant(t);
    const u = await createUser(t, tn);
    const res = await scim(t.app, 'PATCH', `/Users/${u.id}`, tn.token, body);
    expectScimError(res, status, type);
    const again = await scim(t.app, 'GET', `/Users/${u.id}`, tn.token);
    expect(again.json().meta.version).toBe('W/"1"');
  });

  it('honours If-Match: the current version writes, an old one answers 412 and writes nothing', async () => {
    const tn = await tenant(t);
    const u = await createUser(t, tn);
    const first = await scim(
      t.app,
      'PATCH',
      `/Users/${u.id}`,
      tn.token,
      patch({ op: 'replace', path: 'title', value: 'Eng' }),
      { 'if-match': 'W/"1"' },
    );
    expect(first.statusCode, first.body).toBe(200);
    const stale = await scim(
      t.app,
      'PATCH',
      `/Users/${u.id}`,
      tn.token,
      patch({ op: 'replace', path: 'title', value: 'Ops' }),
      { 'if-match': 'W/"1"' },
    );
    expectScimError(stale, 412, undefined);
    const put = await scim(
      t.app,
      'PUT',
      `/Users/${u.id}`,
      tn.token,
      newUser(tn.domain, { userName: u.userName }),
      { 'if-match': '"1"' },
    );
    expectScimError(put, 412, undefined);
    const del = await scim(t.app, 'DELETE', `/Users/${u.id}`, tn.token, undefined, { 'if-match': 'W/"1"' });
    expectScimError(del, 412, undefined);
    const star = await scim(
      t.app,
      'PATCH',
      `/Users/${u.id}`,
      tn.token,
      patch({ op: 'replace', path: 'title', value: 'Ops' }),
      { 'if-match': '*' },
    );
    expect(star.json()).toMatchObject({ title: 'Ops', meta: { version: 'W/"3"' } });
  });

  it('PUT replaces the resource; a userName another user holds answers 409', async () => {
    const tn = await tenant(t);
    const a = await createUser(t, tn);
    const b = await createUser(t, tn);
    const put = await scim(t.app, 'PUT', `/Users/${a.id}`, tn.token, {
      schemas: [USER_SCHEMA],
      userName: a.userName,
      active: true,
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).not.toHaveProperty('name');
    expect(put.json()).not.toHaveProperty('externalId');
    const clash = await scim(t.app, 'PUT', `/Users/${a.id}`, tn.token, {
      schemas: [USER_SCHEMA],
      userName: b.userName,
    });
    expectScimError(clash, 409, 'uniqueness');
    const otherId = await scim(t.app, 'PUT', `/Users/${a.id}`, tn.token, {
      schemas: [USER_SCHEMA],
      id: b.id,
      userName: a.userName,
    });
    expectScimError(otherId, 400, 'mutability');
  });
});

describe('erasure', () => {
  it("an operator's erasure forgets the SCIM user in every organization, its groups included", async () => {
    const a = await tenant(t);
    const b = await tenant(t);
    const u = await createUser(t, a);
    const inB = await scim(
      t.app,
      'POST',
      '/Users',
      b.token,
      newUser(b.domain, { userName: u.userName, emails: [{ value: u.userName }] }),
    );
    expect(inB.json().id).toBe(u.id);
    const g = await scim(t.app, 'POST', '/Groups', a.token, {
      displayName: 'Team',
      members: [{ value: u.id }],
    });
    const erased = await t.admin!.inject({
      method: 'POST',
      url: `/admin/v1/identities/${u.id}/erasures`,
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(erased.statusCode, erased.body).toBe(204);
    expectScimError(await scim(t.app, 'GET', `/Users/${u.id}`, a.token), 404);
    expectScimError(await scim(t.app, 'GET', `/Users/${u.id}`, b.token), 404);
    expect((await scim(t.app, 'GET', `/Groups/${g.json().id}`, a.token)).json().members).toEqual([]);
    const left = await t.ctx.database.db
      .selectFrom('scim_users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('identity_id', '=', u.id)
      .executeTakeFirstOrThrow();
    expect(Number(left.n)).toBe(0);
  });
});

describe('unknown ids', () => {
  it.each([
    'GET',
    'PUT',
    'PATCH',
    'DELETE',
  ] as const)('%s of an unknown or malformed id answers 404', async (method) => {
    const tn = await tenant(t);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const body =
        method === 'PUT'
          ? newUser(tn.domain)
          : method === 'PATCH'
            ? patch({ op: 'replace', path: 'title', value: 'x' })
            : undefined;
      const res = await scim(t.app, method, `/Users/${id}`, tn.token, body);
      expectScimError(res, 404, undefined);
    }
  });
});
