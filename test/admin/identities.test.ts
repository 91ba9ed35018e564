import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminRequest, OTHER_ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';

let t: TestApp;
const get = (url: string, key: string = ADMIN_KEY) => adminRequest(t.admin!, 'GET', url, key);
const ids = (body: { data: Array<{ id: string }> }) => body.data.map((i) => i.id);

/** Five people created a minute apart under one domain; newest first they are people[4]..[0]. */
const people: Person[] = [];
const domain = `d${randomUUID().slice(0, 6)}.example`;

beforeAll(async () => {
  t = await createTestApp({ admin: true });
  for (let i = 0; i < 5; i++) {
    people.push(await createPerson(t.ctx, `user${i}@${domain}`));
    t.clock.advance(60);
  }
});
afterAll(() => t.close());

describe('GET /admin/v1/identities', () => {
  it('finds one identity by its exact normalised identifier, unmasked', async () => {
    const r = await get(
      `/identities?identifierType=email&identifier=${encodeURIComponent(`USER2@${domain.toUpperCase()}`)}`,
    );
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({
      id: people[2].identityId,
      identifiers: [{ type: 'email', value: `user2@${domain}` }],
      disabledAt: null,
      erasedAt: null,
    });
    expect(body.data[0].createdAt).toMatch(/Z$/);
    expect(body.meta.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
  });

  it('finds a phone number from its national form and country', async () => {
    const person = await createPerson(t.ctx);
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${person.identityId}, 'phone', '+33612345678', now(), now())`.execute(
      t.ctx.database.db,
    );
    const r = await get('/identities?identifierType=phone&identifier=06%2012%2034%2056%2078&country=FR');
    expect(r.statusCode, r.body).toBe(200);
    expect(ids(r.json())).toEqual([person.identityId]);
    const prefix = await get(`/identities?prefix=${encodeURIComponent('+3361234')}`);
    expect(ids(prefix.json())).toEqual([person.identityId]);
  });

  it('an address nobody holds gives an empty page', async () => {
    const r = await get(`/identities?identifierType=email&identifier=nobody@${domain}`);
    expect(r.statusCode).toBe(200);
    expect(r.json().data).toEqual([]);
  });

  it('finds by prefix, lower-cased, newest first, in keyset pages with signed cursors', async () => {
    const seen: string[] = [];
    let url = `/identities?prefix=USER&limit=2`;
    const first = await get(url);
    expect(first.statusCode).toBe(200);
    // Other tests' people share the prefix "user": keep only this domain's.
    let after: string | null = null;
    do {
      const r = await get(after ? `${url}&after=${encodeURIComponent(after)}` : url);
      expect(r.statusCode, r.body).toBe(200);
      const body = r.json();
      expect(body.data.length).toBeLessThanOrEqual(2);
      seen.push(...ids(body));
      after = body.meta.pageInfo.nextCursor;
      expect(body.meta.pageInfo.hasNextPage).toBe(after !== null);
    } while (after);
    const mine = seen.filter((id) => people.some((p) => p.identityId === id));
    expect(mine).toEqual(people.map((p) => p.identityId).reverse());
    url = `/identities?prefix=${encodeURIComponent(`user3@${domain}`)}`;
    expect(ids((await get(url)).json())).toEqual([people[3].identityId]);
  });

  it('a prefix matches its LIKE characters literally', async () => {
    const odd = await createPerson(t.ctx, `a_b%c@${domain}`);
    await createPerson(t.ctx, `axbyc@${domain}`);
    expect(ids((await get(`/identities?prefix=${encodeURIComponent('a_b%')}`)).json())).toEqual([
      odd.identityId,
    ]);
    expect((await get(`/identities?prefix=${encodeURIComponent('a%')}`)).json().data).toEqual([]);
    expect((await get(`/identities?prefix=${encodeURIComponent('\\')}`)).json().data).toEqual([]);
  });

  it('without a filter lists every identity, newest first', async () => {
    const r = await get('/identities?limit=100');
    const all = ids(r.json());
    const mine = all.filter((id) => people.some((p) => p.identityId === id));
    expect(mine).toEqual(people.map((p) => p.identityId).reverse());
  });

  it('refuses a tampered, foreign, other-route or other-key cursor', async () => {
    const r = await get(`/identities?prefix=user&limit=1`);
    const cursor: string = r.json().meta.pageInfo.nextCursor;
    expect(cursor).toBeTruthy();
    const parts = cursor.split('.');
    const payload = JSON.parse(Buffer.from(parts[2], 'base64url').toString());
    payload.p.id = people[0].identityId;
    const forged = [
      parts[0],
      parts[1],
      Buffer.from(JSON.stringify(payload)).toString('base64url'),
      parts[3],
    ].join('.');
    const tampered = await get(`/identities?prefix=user&after=${encodeURIComponent(forged)}`);
    expect(tampered.statusCode).toBe(400);
    expect(tampered.json().code).toBe('collection.cursor_tampered');
    // Another operator's key, or another admin list, cannot use it.
    const otherKey = await get(
      `/identities?prefix=user&after=${encodeURIComponent(cursor)}`,
      OTHER_ADMIN_KEY,
    );
    expect(otherKey.json().code).toBe('collection.cursor_invalid');
    const otherRoute = await get(`/audit-records?after=${encodeURIComponent(cursor)}`);
    expect(otherRoute.json().code).toBe('collection.cursor_invalid');
    // Expired.
    const short = (await get(`/identities?prefix=user&limit=1&cursorTtl=1`)).json().meta.pageInfo.nextCursor;
    t.clock.advance(2);
    const expired = await get(`/identities?prefix=user&after=${encodeURIComponent(short)}`);
    expect(expired.json().code).toBe('collection.cursor_expired');
  });

  it('refuses malformed queries with 400 validation.failed', async () => {
    for (const q of [
      'bogus=1',
      'identifierType=provider&identifier=x',
      'identifierType=email',
      'identifier=a@b.example',
      `identifierType=email&identifier=a@${domain}&country=FR`,
      'identifierType=phone&identifier=0612345678',
      'identifierType=phone&identifier=0612345678&country=fr',
      `prefix=a&identifierType=email&identifier=a@${domain}`,
      'prefix=',
      `prefix=${'a'.repeat(321)}`,
      'limit=0',
      'limit=101',
      'limit=x',
      'cursorTtl=86401',
      'after=',
    ]) {
      const r = await get(`/identities?${q}`);
      expect(r.statusCode, q).toBe(400);
      expect(r.json().code, q).toBe('validation.failed');
    }
  });

  it('refuses an unusable identifier with 422', async () => {
    const r = await get('/identities?identifierType=email&identifier=not-an-address');
    expect(r.statusCode).toBe(422);
    expect(r.json().code).toBe('identity.identifier_unusable');
  });
});

describe('GET /admin/v1/identities/{id}', () => {
  it('shows identifiers unmasked, methods, factors, lock, live sessions and last sign-in; never a secret', async () => {
    const p = await createPerson(t.ctx);
    await signIn(t.app, p);
    const grant = await signIn(t.app, p);
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs',
      headers: { authorization: `Bearer ${grant.accessToken}` },
    });
    const factorId = randomUUID();
    const lockedUntil = new Date(t.clock.now().getTime() + 600_000);
    await sql`INSERT INTO second_factors (id, identity_id, label, sealed_secret, algorithm, digits, period, created_at, verified_at)
              VALUES (${factorId}, ${p.identityId}, 'phone app', 'sealed-secret-value', 'SHA1', 6, 30, now(), now())`.execute(
      t.ctx.database.db,
    );
    await sql`UPDATE identities SET failed_attempts = 5, locked_until = ${lockedUntil} WHERE id = ${p.identityId}`.execute(
      t.ctx.database.db,
    );
    const r = await get(`/identities/${p.identityId.toUpperCase()}`);
    expect(r.statusCode, r.body).toBe(200);
    const d = r.json().data;
    expect(d).toMatchObject({
      id: p.identityId,
      identifiers: [{ type: 'email', value: p.email }],
      secondFactors: [{ id: factorId, label: 'phone app', lastUsedAt: null }],
      recoveryCodesRemaining: 0,
      lock: { failedAttempts: 5, lockedUntil: lockedUntil.toISOString(), locked: true },
      liveSessionCount: 1,
      lastSignInAt: t.clock.now().toISOString(),
      disabledAt: null,
      erasedAt: null,
    });
    expect(d.methods.map((m: { kind: string }) => m.kind).sort()).toEqual(['email', 'password']);
    expect(d.methods.find((m: { kind: string }) => m.kind === 'email').display).toBe(p.email);
    const hash = (
      await sql<{
        password_hash: string;
      }>`SELECT password_hash FROM identities WHERE id = ${p.identityId}`.execute(t.ctx.database.db)
    ).rows[0].password_hash;
    expect(r.body).not.toContain(hash);
    expect(r.body).not.toContain('sealed-secret-value');
    expect(r.body).not.toContain(p.password);
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    const r = await get(`/identities/${randomUUID()}`);
    expect(r.statusCode).toBe(404);
    expect(r.json().code).toBe('admin.identity_not_found');
    for (const bad of ['not-a-uuid', '123', `${randomUUID()}x`, `urn:uuid:${randomUUID()}`]) {
      const b = await get(`/identities/${encodeURIComponent(bad)}`);
      expect(b.statusCode, bad).toBe(400);
      expect(b.json().code).toBe('validation.failed');
    }
  });
});
