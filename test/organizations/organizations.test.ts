import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { call, createOrganization, expectProblem, join, member, ORGS, uniqueSlug } from './support.js';

// Organizations: creation, slug rules, the caller's list, one organization, no enumeration, ETags.
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('POST /organizations', () => {
  it('creates the organization with the caller as owner, audited, with a strong ETag', async () => {
    const me = await member(t);
    const slug = uniqueSlug();
    const res = await call(t.app, 'POST', ORGS, me.token, { name: '  Acme Inc  ', slug });
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({ name: 'Acme Inc', slug, role: 'owner', requireSecondFactor: false });
    expect(data.permissions).toContain('organization:transfer');
    expect(String(res.headers.etag)).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(await auditCount(t, 'organization.created', me.person.identityId)).toBe(1);
  });

  it('refuses bad names and slugs with 400, and unknown members (strict body)', async () => {
    const me = await member(t);
    for (const payload of [
      { name: 'A', slug: 'Upper-Case' },
      { name: 'A', slug: 'a' },
      { name: 'A', slug: 'x'.repeat(49) },
      { name: 'A', slug: 'has space' },
      { name: 'A', slug: 'under_score' },
      { name: '', slug: uniqueSlug() },
      { name: ' ', slug: uniqueSlug() },
      { name: 'x'.repeat(101), slug: uniqueSlug() },
      { name: 'A', slug: uniqueSlug(), extra: true },
      { slug: uniqueSlug() },
    ]) {
      expectProblem(await call(t.app, 'POST', ORGS, me.token, payload), 400, 'validation.failed');
    }
    // The bounds themselves are accepted.
    const ok = await call(t.app, 'POST', ORGS, me.token, {
      name: 'x'.repeat(100),
      slug: `a${'-'.repeat(47)}`,
    });
    expect(ok.statusCode, ok.body).toBe(201);
    expect((await call(t.app, 'POST', ORGS, me.token, { name: 'B', slug: '42' })).statusCode).toBe(201);
  });

  it('a slug already in use is 409 organization.slug_taken, whoever holds it', async () => {
    const [a, b] = [await member(t), await member(t)];
    const { slug } = await createOrganization(t, a.token);
    expectProblem(
      await call(t.app, 'POST', ORGS, b.token, { name: 'Other', slug }),
      409,
      'organization.slug_taken',
    );
    expectProblem(
      await call(t.app, 'POST', ORGS, a.token, { name: 'Again', slug }),
      409,
      'organization.slug_taken',
    );
  });

  it('needs a session (401) and a verified identifier (403)', async () => {
    const anonymous = await t.app.inject({
      method: 'POST',
      url: ORGS,
      payload: { name: 'A', slug: uniqueSlug() },
    });
    expectProblem(anonymous, 401, 'identity.session_required');
    const me = await member(t);
    await sql`UPDATE identifiers SET removed_at = ${t.clock.now()} WHERE identity_id = ${me.person.identityId}`.execute(
      t.ctx.database.db,
    );
    expectProblem(
      await call(t.app, 'POST', ORGS, me.token, { name: 'A', slug: uniqueSlug() }),
      403,
      'organization.identifier_required',
    );
  });
});

describe('GET /organizations and GET /organizations/{id}', () => {
  it('lists only the caller’s memberships, newest first, paged with signed cursors', async () => {
    const me = await member(t);
    const other = await member(t);
    const mine = [];
    for (let i = 0; i < 3; i++) {
      mine.push(await createOrganization(t, me.token, `Mine ${i}`));
      t.clock.advance(1);
    }
    const theirs = await createOrganization(t, other.token, 'Theirs');
    await join(t, theirs.id, me.person.identityId, 'member');
    t.clock.advance(1);
    await createOrganization(t, other.token, 'Not mine');

    const first = await call(t.app, 'GET', `${ORGS}?limit=2`, me.token);
    expect(first.statusCode, first.body).toBe(200);
    const page1 = first.json();
    expect(page1.data.map((o: { id: string }) => o.id)).toEqual([theirs.id, mine[2].id]);
    expect(page1.data[0]).toEqual({
      id: theirs.id,
      name: 'Theirs',
      slug: theirs.slug,
      role: 'member',
      roleDisplayName: {},
      requireSecondFactor: false,
      active: false,
    });
    expect(page1.meta.pageInfo.hasNextPage).toBe(true);
    const second = await call(
      t.app,
      'GET',
      `${ORGS}?limit=2&after=${page1.meta.pageInfo.nextCursor}`,
      me.token,
    );
    expect(second.json().data.map((o: { id: string }) => o.id)).toEqual([mine[1].id, mine[0].id]);
    expect(second.json().meta.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
    // Another caller's cursor is refused.
    const stolen = await call(
      t.app,
      'GET',
      `${ORGS}?limit=2&after=${page1.meta.pageInfo.nextCursor}`,
      other.token,
    );
    expectProblem(stolen, 400, 'collection.cursor_invalid');
  });

  it('one organization for a member; unknown and not-a-member are the identical 404', async () => {
    const owner = await member(t);
    const stranger = await member(t);
    const org = await createOrganization(t, owner.token, 'Visible');
    const mine = await call(t.app, 'GET', `${ORGS}/${org.id}`, owner.token);
    expect(mine.statusCode, mine.body).toBe(200);
    expect(mine.json().data).toMatchObject({ id: org.id, name: 'Visible', role: 'owner' });

    const notMember = await call(t.app, 'GET', `${ORGS}/${org.id}`, stranger.token);
    const unknown = await call(t.app, 'GET', `${ORGS}/${randomUUID()}`, stranger.token);
    expectProblem(notMember, 404, 'organization.not_found');
    expect(notMember.body).toBe(unknown.body);
    expectProblem(
      await call(t.app, 'GET', `${ORGS}/${org.id}/members`, stranger.token),
      404,
      'organization.not_found',
    );
    expectProblem(
      await call(t.app, 'PATCH', `${ORGS}/${org.id}`, stranger.token, { name: 'Mine now' }),
      404,
      'organization.not_found',
    );
  });

  it('answers 304 to a matching If-None-Match; PATCH checks If-Match strongly (412) and moves the ETag', async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token, 'Tagged');
    const got = await call(t.app, 'GET', `${ORGS}/${org.id}`, owner.token);
    const etag = String(got.headers.etag);
    const again = await call(t.app, 'GET', `${ORGS}/${org.id}`, owner.token, undefined, {
      'if-none-match': etag,
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');

    const weak = await call(
      t.app,
      'PATCH',
      `${ORGS}/${org.id}`,
      owner.token,
      { name: 'X' },
      { 'if-match': `W/${etag}` },
    );
    expectProblem(weak, 412, 'precondition.failed');
    const patched = await call(
      t.app,
      'PATCH',
      `${ORGS}/${org.id}`,
      owner.token,
      { name: 'Renamed', requireSecondFactor: true },
      { 'if-match': etag },
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().data).toMatchObject({ name: 'Renamed', requireSecondFactor: true });
    expect(patched.headers.etag).not.toBe(etag);
    // The old tag no longer names the organization.
    const stale = await call(
      t.app,
      'PATCH',
      `${ORGS}/${org.id}`,
      owner.token,
      { name: 'Y' },
      { 'if-match': etag },
    );
    expectProblem(stale, 412, 'precondition.failed');
    // Without If-Match the write applies to whatever is current.
    const blind = await call(t.app, 'PATCH', `${ORGS}/${org.id}`, owner.token, { name: 'Blind' });
    expect(blind.statusCode).toBe(200);
    expectProblem(await call(t.app, 'PATCH', `${ORGS}/${org.id}`, owner.token, {}), 400, 'validation.failed');
    expect(await auditCount(t, 'organization.updated', owner.person.identityId)).toBe(2);
  });

  it('a member reads but may not update (403 organization.permission_denied)', async () => {
    const owner = await member(t);
    const plain = await member(t);
    const org = await createOrganization(t, owner.token);
    await join(t, org.id, plain.person.identityId, 'member');
    const read = await call(t.app, 'GET', `${ORGS}/${org.id}`, plain.token);
    expect(read.json().data).toMatchObject({
      role: 'member',
      permissions: ['members:read', 'organization:read'],
    });
    expectProblem(
      await call(t.app, 'PATCH', `${ORGS}/${org.id}`, plain.token, { name: 'Nope' }),
      403,
      'organization.permission_denied',
    );
  });
});
