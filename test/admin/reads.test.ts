import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type VerifiedRecord, verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { ADMIN_KEY, ADMIN_KEY_NAME, adminRequest, OTHER_ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';

let t: TestApp;
let a: Person;
let b: Person;
// Both addresses start with it, and no other identity's does: a prefix search finds exactly a and b.
const tag = `r${randomUUID().slice(0, 8)}`;
const OPS = `admin:${ADMIN_KEY_NAME}`;

const get = (url: string, key: string = ADMIN_KEY) => adminRequest(t.admin!, 'GET', url, key);

/** The newest seq of the trail, read from the table (a read through the API would be audited). */
async function head(): Promise<number> {
  const rows = await t.ctx.audit.page(t.ctx.database.db, { identityId: null, beforeSeq: null, limit: 1 });
  return rows[0]?.seq ?? 0;
}

/** The records appended after `seq`, oldest first, each with its verified flag. */
function since(seq: number): Promise<VerifiedRecord[]> {
  return t.ctx.audit.batch(t.ctx.database.db, { identityId: null, afterSeq: seq, limit: 1000 });
}

/** Runs `read` and returns the records it appended; fails unless it answered `status`. */
async function recordsOf(read: () => ReturnType<typeof get>, status = 200): Promise<VerifiedRecord[]> {
  const before = await head();
  const r = await read();
  expect(r.statusCode, r.body).toBe(status);
  return since(before);
}

beforeAll(async () => {
  t = await createTestApp({ admin: true });
  a = await createPerson(t.ctx, `${tag}-a@example.com`);
  t.clock.advance(60);
  b = await createPerson(t.ctx, `${tag}-b@example.com`);
});
afterAll(() => t.close());

describe('an operator reading an identity', () => {
  it('writes one admin.identity.read record: the key, the identity, what was read, never the data', async () => {
    const records = await recordsOf(() => get(`/identities/${a.identityId}`));
    expect(records).toEqual([
      {
        seq: expect.any(Number),
        id: expect.any(String),
        occurredAt: t.clock.now().toISOString(),
        name: 'admin.identity.read',
        actor: OPS,
        target: a.identityId,
        outcome: 'success',
        details: { view: 'detail' },
        verified: true,
      },
    ]);
    expect(JSON.stringify(records)).not.toContain(tag);

    // Each key is its own actor; an id in capitals names the same identity.
    const other = await recordsOf(() => get(`/identities/${a.identityId.toUpperCase()}`, OTHER_ADMIN_KEY));
    expect(other.map((r) => [r.name, r.actor, r.target])).toEqual([
      ['admin.identity.read', 'admin:auditor', a.identityId],
    ]);

    // HEAD runs the read, though the body is dropped: it is recorded as one.
    const viaHead = await recordsOf(() =>
      t.admin!.inject({
        method: 'HEAD',
        url: `/admin/v1/identities/${a.identityId}`,
        headers: { authorization: `Bearer ${ADMIN_KEY}` },
      }),
    );
    expect(viaHead.map((r) => [r.name, r.target])).toEqual([['admin.identity.read', a.identityId]]);

    // Nothing read, nothing recorded.
    expect(await recordsOf(() => get(`/identities/${randomUUID()}`), 404)).toEqual([]);
    expect(await recordsOf(() => get('/identities/not-an-id'), 400)).toEqual([]);
    expect(await recordsOf(() => get(`/identities/${a.identityId}`, 'wrong'), 401)).toEqual([]);
  });

  it('the audit listing shows who read the identity', async () => {
    const listed = (await get(`/audit-records?identityId=${a.identityId}&limit=100`)).json()
      .data as VerifiedRecord[];
    const reads = listed.filter((r) => r.name === 'admin.identity.read');
    expect(reads.map((r) => r.actor)).toEqual([OPS, 'admin:auditor', OPS]);
    expect(reads.every((r) => r.verified && r.target === a.identityId)).toBe(true);
  });
});

describe('an operator searching identities', () => {
  it('writes one record per identity the page shows, with the form of the search but never its value', async () => {
    const exact = await recordsOf(() =>
      get(
        `/identities?identifierType=email&identifier=${encodeURIComponent(`${tag.toUpperCase()}-A@example.com`)}`,
      ),
    );
    expect(exact.map((r) => [r.name, r.actor, r.target, r.details])).toEqual([
      ['admin.identity.read', OPS, a.identityId, { view: 'search', form: 'exact' }],
    ]);

    const prefix = await recordsOf(() => get(`/identities?prefix=${tag}`));
    expect(prefix.map((r) => [r.name, r.target, r.details])).toEqual([
      ['admin.identity.read', b.identityId, { view: 'search', form: 'prefix' }],
      ['admin.identity.read', a.identityId, { view: 'search', form: 'prefix' }],
    ]);

    // Every identity, one per page: the newest is b.
    const all = await recordsOf(() => get('/identities?limit=1'));
    expect(all.map((r) => [r.target, r.details])).toEqual([[b.identityId, { view: 'search', form: 'all' }]]);

    for (const r of [...exact, ...prefix, ...all]) {
      expect(r.verified).toBe(true);
      expect(JSON.stringify(r)).not.toContain(tag);
    }

    // An empty page shows nobody; a refused search reads nothing.
    expect(
      await recordsOf(() => get(`/identities?identifierType=email&identifier=${tag}-none@example.com`)),
    ).toEqual([]);
    expect(await recordsOf(() => get(`/identities?prefix=${tag}&identifier=x`), 400)).toEqual([]);
    expect(
      await recordsOf(() => get('/identities?identifierType=phone&identifier=12&country=FR'), 422),
    ).toEqual([]);
  });
});

describe('an operator reading the audit trail', () => {
  it('a page writes one admin.audit.read after it is read: no page shows its own record', async () => {
    const before = await head();
    const r = await get('/audit-records?limit=3');
    expect(r.statusCode).toBe(200);
    const page = r.json().data as VerifiedRecord[];
    expect(page.map((i) => i.seq)).toEqual([before, before - 1, before - 2]);
    const records = await since(before);
    expect(records.map((i) => [i.seq, i.name, i.actor, i.target, i.details, i.verified])).toEqual([
      [before + 1, 'admin.audit.read', OPS, null, { view: 'page', records: 3 }, true],
    ]);

    // The next read shows the last one; each read adds exactly one record, whatever it shows.
    const next = (await get('/audit-records?limit=1')).json().data as VerifiedRecord[];
    expect(next.map((i) => [i.seq, i.name])).toEqual([[before + 1, 'admin.audit.read']]);
    for (let i = 0; i < 3; i++) expect((await get('/audit-records?limit=100')).statusCode).toBe(200);
    expect((await since(before)).map((i) => i.name)).toEqual(Array(5).fill('admin.audit.read'));

    // Filtered by an identity: that identity is the target.
    const filtered = await recordsOf(() => get(`/audit-records?identityId=${b.identityId.toUpperCase()}`));
    expect(filtered.map((i) => [i.name, i.target, i.details])).toEqual([
      ['admin.audit.read', b.identityId, { view: 'page', records: expect.any(Number) }],
    ]);
    // A refused query reads nothing.
    expect(await recordsOf(() => get('/audit-records?limit=0'), 400)).toEqual([]);
  });

  it('a stream writes its record before the first line and ends just before it', async () => {
    const before = await head();
    const r = await get('/audit-records/stream');
    expect(r.statusCode).toBe(200);
    const lines = r.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as VerifiedRecord);
    const records = await since(before);
    expect(records.map((i) => [i.seq, i.name, i.actor, i.target, i.details])).toEqual([
      [before + 1, 'admin.audit.read', OPS, null, { view: 'stream', afterSeq: 0 }],
    ]);
    expect(lines.map((i) => i.seq)).toEqual(Array.from({ length: before }, (_, i) => i + 1));

    const filtered = await recordsOf(() =>
      get(`/audit-records/stream?identityId=${a.identityId}&afterSeq=2`),
    );
    expect(filtered.map((i) => [i.name, i.target, i.details])).toEqual([
      ['admin.audit.read', a.identityId, { view: 'stream', afterSeq: 2 }],
    ]);
  });

  it('the chain still verifies with every read record in it', async () => {
    const result = await verifyChain(t.ctx.database.db, deriveKey(t.config.secretsKey, 'audit-seal'));
    expect(result).toEqual({ ok: true, count: await head() });
  });
});
