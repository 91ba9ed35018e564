import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Grant, type Person, signIn } from '../helpers/identities.js';
import { context, expectProblem, HISTORY, sidOf, signInRaw } from './support.js';

interface HistoryItem {
  id: string;
  occurredAt: string;
  method: string;
  outcome: 'succeeded' | 'refused';
  ipAddress: string | null;
  userAgent: string | null;
}

describe('GET /session/context', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('describes the caller with masked identifiers only', async () => {
    const person = await createPerson(t.ctx, `ada.lovelace-${Date.now()}@example.com`);
    const grant = await signIn(t.app, person);
    const res = await context(t.app, grant.accessToken);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).not.toContain(person.email);
    expect(res.body.toLowerCase()).not.toContain('lovelace');
    const { data } = res.json();
    expect(data.identityId).toBe(person.identityId);
    expect(data.sessionId).toBe(sidOf(grant.accessToken));
    expect(data.identifiers).toHaveLength(1);
    expect(data.identifiers[0]).toMatchObject({ type: 'email', value: 'a***@example.com' });
    expect(data.identifiers[0].verifiedAt).toMatch(/Z$/);
    expect(data.methods).toEqual(expect.arrayContaining(['password', 'email']));
    expect(data.organizations).toEqual([]);
  });

  it('sends a weak ETag and answers 304 with an empty body on If-None-Match', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const first = await context(t.app, grant.accessToken);
    const etag = String(first.headers.etag);
    expect(etag.startsWith('W/"')).toBe(true);

    const again = await context(t.app, grant.accessToken, { 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    // Weak comparison: the strong form of the same tag also matches.
    expect((await context(t.app, grant.accessToken, { 'if-none-match': etag.slice(2) })).statusCode).toBe(
      304,
    );
    // A different tag gets the full representation.
    const miss = await context(t.app, grant.accessToken, { 'if-none-match': 'W/"something-else"' });
    expect(miss.statusCode).toBe(200);
    expect(miss.json()).toEqual(first.json());

    // Another identity has another context and another tag.
    const other = await createPerson(t.ctx);
    const otherGrant = await signIn(t.app, other);
    const theirs = await context(t.app, otherGrant.accessToken, { 'if-none-match': etag });
    expect(theirs.statusCode).toBe(200);
    expect(theirs.json().data.identityId).toBe(other.identityId);
    expect(theirs.json().data.identityId).not.toBe(person.identityId);
    expect(theirs.headers.etag).not.toBe(etag);
    expect(theirs.body).not.toContain(person.identityId);
  });
});

describe('GET /sign-ins/history', () => {
  let t: TestApp;
  let person: Person;
  let grant: Grant;
  /** Outcomes in the order the attempts were made (oldest first). */
  const made: Array<'succeeded' | 'refused'> = [];

  const list = (token: string, query = '', headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url: `${HISTORY}${query}`, headers: { ...bearer(token), ...headers } });

  beforeAll(async () => {
    t = await createTestApp();
    person = await createPerson(t.ctx);
    // Five attempts, one second apart: refused and succeeded. The last one is the caller's session.
    for (const ok of [false, true, false, false, true]) {
      t.clock.advance(1);
      const res = await signInRaw(t.app, person.email, ok ? person.password : 'wrong password here');
      expect(res.statusCode).toBe(ok ? 201 : 401);
      made.push(ok ? 'succeeded' : 'refused');
      if (ok) grant = res.json().data as Grant;
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('pages newest first with limit=2; the cursor round trip returns each entry once', async () => {
    const pages: HistoryItem[][] = [];
    let after: string | null = null;
    for (let i = 0; i < 5; i++) {
      const res = await list(
        grant.accessToken,
        `?limit=2${after ? `&after=${encodeURIComponent(after)}` : ''}`,
      );
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      pages.push(body.data);
      expect(body.meta.pageInfo.hasNextPage).toBe(body.meta.pageInfo.nextCursor !== null);
      after = body.meta.pageInfo.nextCursor;
      if (!after) break;
    }
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    const items = pages.flat();
    expect(new Set(items.map((i) => i.id)).size).toBe(5);
    expect(items.map((i) => i.outcome)).toEqual([...made].reverse());
    for (const item of items) expect(item.method).toBe('password');
    const times = items.map((i) => Date.parse(i.occurredAt));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    expect(new Set(times).size).toBe(5);
  });

  it('answers 304 with If-None-Match on an unchanged page', async () => {
    const first = await list(grant.accessToken, '?limit=2');
    const etag = String(first.headers.etag);
    expect(etag.startsWith('W/"')).toBe(true);
    const again = await list(grant.accessToken, '?limit=2', { 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('refuses a tampered cursor, a cursor of another identity, an expired cursor and an unknown parameter', async () => {
    const first = await list(grant.accessToken, '?limit=2');
    const cursor = first.json().meta.pageInfo.nextCursor as string;
    const [v, k, p, s] = cursor.split('.');
    const flipped = `${v}.${k}.${p}.${s[0] === 'A' ? 'B' : 'A'}${s.slice(1)}`;
    expectProblem(
      await list(grant.accessToken, `?limit=2&after=${encodeURIComponent(flipped)}`),
      400,
      'collection.cursor_tampered',
    );

    const other = await createPerson(t.ctx);
    const otherGrant = await signIn(t.app, other);
    expectProblem(
      await list(otherGrant.accessToken, `?limit=2&after=${encodeURIComponent(cursor)}`),
      400,
      'collection.cursor_invalid',
    );

    expectProblem(await list(grant.accessToken, '?limit=2&sort=occurredAt'), 400, 'validation.failed');

    const short = await list(grant.accessToken, '?limit=2&cursorTtl=60');
    const shortCursor = short.json().meta.pageInfo.nextCursor as string;
    t.clock.advance(59);
    expect(
      (await list(grant.accessToken, `?limit=2&after=${encodeURIComponent(shortCursor)}`)).statusCode,
    ).toBe(200);
    t.clock.advance(2);
    expectProblem(
      await list(grant.accessToken, `?limit=2&after=${encodeURIComponent(shortCursor)}`),
      400,
      'collection.cursor_expired',
    );
  });
});
