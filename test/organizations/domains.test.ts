import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, ADMIN_KEY_NAME } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { call, createOrganization, expectProblem, join, member, ORGS } from './support.js';

// Issue 47, item 3: an organization claims a domain, proves it by a DNS TXT record looked up through
// DNS_RESOLVERS (here a dns2 server on loopback), or an operator verifies it; one organization per
// verified domain.

let t: TestApp;
let dns: TestDns;
const TIMEOUT_MS = 300;

beforeAll(async () => {
  dns = await startDns();
  t = await createTestApp({
    admin: true,
    env: { DNS_RESOLVERS: dns.address, DNS_TIMEOUT_MS: String(TIMEOUT_MS) },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

let n = 0;
const unique = (base = 'example.com') => `d${++n}-${Date.now().toString(36)}.${base}`;

async function owned() {
  const owner = await member(t);
  const org = await createOrganization(t, owner.token);
  return { owner, org };
}

async function claim(token: string, orgId: string, domain: string) {
  const res = await call(t.app, 'POST', `${ORGS}/${orgId}/domains`, token, { domain });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as {
    id: string;
    domain: string;
    txtRecord: { name: string; value: string };
    verifiedAt: string | null;
  };
}

const verify = (token: string, orgId: string, domainId: string) =>
  call(t.app, 'POST', `${ORGS}/${orgId}/domains/${domainId}/verifications`, token);

function adm(method: 'GET' | 'POST', url: string) {
  return t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
}

async function row(id: string) {
  return t.ctx.database.db
    .selectFrom('organization_domains')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst();
}

async function eventsOf(orgId: string) {
  const r = await sql<{ type: string; actor: string; data: Record<string, unknown> }>`
    SELECT type, actor, data FROM events WHERE organization_id = ${orgId} AND type LIKE 'organization.domain.%'
    ORDER BY appended`.execute(t.ctx.database.db);
  return r.rows;
}

describe('claiming a domain', () => {
  it('answers 201 with the TXT record to publish, normalised lower-case punycode; audited, evented', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, ' Bücher.Example.COM. ');
    expect(d.domain).toBe('xn--bcher-kva.example.com');
    expect(d.verifiedAt).toBeNull();
    expect(d.txtRecord.name).toBe('_identity-service-verification.xn--bcher-kva.example.com');
    expect(d.txtRecord.value).toMatch(/^identity-service-verification=[A-Za-z0-9_-]{43}$/);
    expect(await auditCount(t, 'organization.domain.added', d.id)).toBe(1);
    const events = await eventsOf(org.id);
    expect(events.map((e) => e.type)).toEqual(['organization.domain.added']);
    expect(events[0].data).toMatchObject({ id: d.id, domain: d.domain, verifiedAt: null });
    expect(JSON.stringify(events[0].data)).not.toContain(d.txtRecord.value);
    // The same domain twice in one organization: 409; listed once.
    const again = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, { domain: d.domain });
    expectProblem(again, 409, 'organization.domain_exists');
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/domains`, owner.token);
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((x: { id: string }) => x.id)).toEqual([d.id]);
  });

  it.each([
    'com',
    'localhost',
    '192.168.1.10',
    '[::1]',
    '::1',
    'exa mple.com',
    '-bad.example.com',
    'bad-.example.com',
    'a..example.com',
    `${'a'.repeat(64)}.example.com`,
    'user@example.com',
    'https://example.com',
    'example.123',
  ])('refuses %j with 422 organization.domain_invalid, nothing written', async (domain) => {
    const { owner, org } = await owned();
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, { domain });
    expectProblem(res, 422, 'organization.domain_invalid');
    const count = await t.ctx.database.db
      .selectFrom('organization_domains')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('organization_id', '=', org.id)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });

  it('refuses an unknown member in the body (strict) with 400', async () => {
    const { owner, org } = await owned();
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, {
      domain: unique(),
      verified: true,
    });
    expectProblem(res, 400, 'validation.failed');
  });
});

describe('verifying by DNS', () => {
  it('verifies when the TXT record carries the token (among other records); audited, evented', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    dns.set(d.txtRecord.name, 'v=spf1 -all', d.txtRecord.value);
    const res = await verify(owner.token, org.id, d.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ id: d.id, verifiedBy: 'dns' });
    expect(res.json().data.verifiedAt).toBe(t.clock.now().toISOString());
    expect(dns.questions).toContain(d.txtRecord.name);
    expect(await auditCount(t, 'organization.domain.verified', d.id)).toBe(1);
    expect((await eventsOf(org.id)).map((e) => e.type)).toEqual([
      'organization.domain.added',
      'organization.domain.verified',
    ]);
    // Again: answered as it is, no second event.
    const again = await verify(owner.token, org.id, d.id);
    expect(again.statusCode).toBe(200);
    expect((await eventsOf(org.id)).length).toBe(2);
  });

  it('accepts a record split into several strings (one value)', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    const v = d.txtRecord.value;
    dns.set(d.txtRecord.name, [v.slice(0, 20), v.slice(20)]);
    expect((await verify(owner.token, org.id, d.id)).statusCode).toBe(200);
  });

  it.each([
    ['missing', () => []],
    ['wrong token', (v: string) => [`${v.slice(0, -1)}${v.endsWith('A') ? 'B' : 'A'}`]],
    ['token of another claim', () => [`identity-service-verification=${'x'.repeat(43)}`]],
    ['prefix only', () => ['identity-service-verification=']],
  ])('a %s record answers 422 with the expected record, the claim unverified', async (_, make) => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    const values = (make as (v: string) => string[])(d.txtRecord.value);
    if (values.length > 0) dns.set(d.txtRecord.name, ...values);
    const res = await verify(owner.token, org.id, d.id);
    expectProblem(res, 422, 'organization.domain_unverified');
    expect(res.json().txtRecord).toEqual(d.txtRecord);
    const stored = await row(d.id);
    expect(stored?.verified_at).toBeNull();
    expect(stored?.verified_by).toBeNull();
    expect(stored?.last_checked_at).not.toBeNull();
    expect((await eventsOf(org.id)).map((e) => e.type)).toEqual(['organization.domain.added']);
    expect(await auditCount(t, 'organization.domain.verification_failed', d.id)).toBe(1);
  });

  it('a resolver that never answers gives 503 within the timeout, nothing changed', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    dns.silent(d.txtRecord.name);
    const started = performance.now();
    const res = await verify(owner.token, org.id, d.id);
    const took = performance.now() - started;
    expectProblem(res, 503, 'organization.domain_check_unavailable');
    expect(res.json().retryable).toBe(true);
    // One server, one try: bounded by the timeout and our own bound (timeout + 500 ms), not hanging.
    expect(took).toBeLessThan(TIMEOUT_MS + 1500);
    const stored = await row(d.id);
    expect(stored?.verified_at).toBeNull();
    expect(stored?.last_checked_at).toBeNull();
  });

  it('a domain verified by another organization answers 409 organization.domain_taken', async () => {
    const a = await owned();
    const b = await owned();
    const domain = unique();
    const da = await claim(a.owner.token, a.org.id, domain);
    const db = await claim(b.owner.token, b.org.id, domain);
    expect(db.txtRecord.value).not.toBe(da.txtRecord.value);
    dns.set(da.txtRecord.name, da.txtRecord.value, db.txtRecord.value);
    expect((await verify(a.owner.token, a.org.id, da.id)).statusCode).toBe(200);
    const res = await verify(b.owner.token, b.org.id, db.id);
    expectProblem(res, 409, 'organization.domain_taken');
    expect((await row(db.id))?.verified_at).toBeNull();
    // Once A removes its claim, B can verify.
    const del = await call(t.app, 'DELETE', `${ORGS}/${a.org.id}/domains/${da.id}`, a.owner.token);
    expect(del.statusCode).toBe(204);
    expect((await verify(b.owner.token, b.org.id, db.id)).statusCode).toBe(200);
  });

  it('the database refuses a second verified row of one domain (the index, not the code)', async () => {
    const a = await owned();
    const b = await owned();
    const domain = unique();
    const da = await claim(a.owner.token, a.org.id, domain);
    const db = await claim(b.owner.token, b.org.id, domain);
    const now = t.clock.now();
    await t.ctx.database.db
      .updateTable('organization_domains')
      .set({ verified_at: now, verified_by: 'operator' })
      .where('id', '=', da.id)
      .execute();
    await expect(
      t.ctx.database.db
        .updateTable('organization_domains')
        .set({ verified_at: now, verified_by: 'operator' })
        .where('id', '=', db.id)
        .execute(),
    ).rejects.toMatchObject({ code: '23505' });
  });
});

describe('permissions', () => {
  it('a plain member gets 403, a stranger 404, on every domain route', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    const plain = await member(t);
    await join(t, org.id, plain.person.identityId, 'member');
    const stranger = await member(t);
    const routes: ['GET' | 'POST' | 'DELETE', string, unknown?][] = [
      ['POST', `${ORGS}/${org.id}/domains`, { domain: unique() }],
      ['GET', `${ORGS}/${org.id}/domains`],
      ['POST', `${ORGS}/${org.id}/domains/${d.id}/verifications`],
      ['DELETE', `${ORGS}/${org.id}/domains/${d.id}`],
    ];
    for (const [method, url, body] of routes) {
      expectProblem(await call(t.app, method, url, plain.token, body), 403, 'organization.permission_denied');
      expectProblem(await call(t.app, method, url, stranger.token, body), 404, 'organization.not_found');
    }
    // An admin may.
    const admin = await member(t);
    await join(t, org.id, admin.person.identityId, 'admin');
    expect((await call(t.app, 'GET', `${ORGS}/${org.id}/domains`, admin.token)).statusCode).toBe(200);
    expect((await row(d.id))?.verified_at).toBeNull();
  });

  it('a domain id of another organization is 404 organization.domain_not_found', async () => {
    const a = await owned();
    const b = await owned();
    const d = await claim(a.owner.token, a.org.id, unique());
    expectProblem(await verify(b.owner.token, b.org.id, d.id), 404, 'organization.domain_not_found');
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${b.org.id}/domains/${d.id}`, b.owner.token),
      404,
      'organization.domain_not_found',
    );
    expect(await row(d.id)).toBeDefined();
  });
});

describe('removing', () => {
  it('deletes the claim (verified or not); audited, evented; twice is 404', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    const res = await call(t.app, 'DELETE', `${ORGS}/${org.id}/domains/${d.id}`, owner.token);
    expect(res.statusCode).toBe(204);
    expect(await row(d.id)).toBeUndefined();
    expect(await auditCount(t, 'organization.domain.removed', d.id)).toBe(1);
    expect((await eventsOf(org.id)).map((e) => e.type)).toEqual([
      'organization.domain.added',
      'organization.domain.removed',
    ]);
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${org.id}/domains/${d.id}`, owner.token),
      404,
      'organization.domain_not_found',
    );
  });
});

describe('operators', () => {
  it('list an organization’s domains and verify one without DNS, audited with the operator', async () => {
    const { owner, org } = await owned();
    const d = await claim(owner.token, org.id, unique());
    const list = await adm('GET', `/organizations/${org.id}/domains`);
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().data.map((x: { id: string }) => x.id)).toEqual([d.id]);
    const before = dns.questions.length;
    const res = await adm('POST', `/organizations/${org.id}/domains/${d.id}/verifications`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ id: d.id, verifiedBy: 'operator' });
    expect(dns.questions.length).toBe(before);
    const actor = `admin:${ADMIN_KEY_NAME}`;
    expect(await auditCount(t, 'organization.domain.verified', { actor })).toBeGreaterThanOrEqual(1);
    const events = await eventsOf(org.id);
    expect(events.at(-1)).toMatchObject({ type: 'organization.domain.verified', actor });
  });

  it('answer 409 for a domain another organization verified, 404 for unknown ones', async () => {
    const a = await owned();
    const b = await owned();
    const domain = unique();
    const da = await claim(a.owner.token, a.org.id, domain);
    const db = await claim(b.owner.token, b.org.id, domain);
    expect((await adm('POST', `/organizations/${a.org.id}/domains/${da.id}/verifications`)).statusCode).toBe(
      200,
    );
    expectProblem(
      await adm('POST', `/organizations/${b.org.id}/domains/${db.id}/verifications`),
      409,
      'organization.domain_taken',
    );
    expectProblem(
      await adm('POST', `/organizations/${b.org.id}/domains/${da.id}/verifications`),
      404,
      'organization.domain_not_found',
    );
    expectProblem(
      await adm('GET', `/organizations/${crypto.randomUUID()}/domains`),
      404,
      'admin.organization_not_found',
    );
  });
});
