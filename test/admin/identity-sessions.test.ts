import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, ADMIN_KEY_NAME, adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';

let t: TestApp;
let a: Person;
let b: Person;
const OPS = `admin:${ADMIN_KEY_NAME}`;
const UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

const get = (url: string) => adminRequest(t.admin!, 'GET', url);

async function signInFrom(p: Person, ip: string, userAgent: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    remoteAddress: ip,
    headers: { 'user-agent': userAgent },
    payload: { identifierType: 'email', identifier: p.email, password: p.password },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { accessToken: string };
}

beforeAll(async () => {
  t = await createTestApp({ admin: true });
  a = await createPerson(t.ctx, `sessions-a-${randomUUID().slice(0, 8)}@example.com`);
  b = await createPerson(t.ctx, `sessions-b-${randomUUID().slice(0, 8)}@example.com`);
});
afterAll(() => t.close());

describe('GET /admin/v1/identities/{id}/sessions', () => {
  it("lists the person's live sessions newest first, with device, address and last activity; audited", async () => {
    await signInFrom(a, '203.0.113.7', UA);
    t.clock.advance(60);
    const second = await signInFrom(a, '198.51.100.9', 'curl/8.0');
    t.clock.advance(60);
    await signIn(t.app, b); // another person's session never shows
    // One ended session: not live, not listed.
    const ended = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs',
      headers: bearer(second.accessToken),
    });
    expect(ended.statusCode, ended.body).toBe(204);

    const r = await get(`/identities/${a.identityId}/sessions`);
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toEqual({
      id: expect.any(String),
      createdAt: expect.any(String),
      lastActiveAt: expect.any(String),
      sessionExpiresAt: expect.any(String),
      method: 'password',
      device: expect.objectContaining({ browser: expect.stringContaining('Chrome'), os: 'Linux' }),
      ipAddress: '203.0.113.7',
    });
    expect(body.meta.pageInfo).toEqual(expect.objectContaining({ hasNextPage: false }));

    const audit = await adminRequest(t.admin!, 'GET', `/audit-records?identityId=${a.identityId}&limit=5`);
    expect(audit.statusCode, audit.body).toBe(200);
    const read = audit.json().data.find((x: { name: string }) => x.name === 'admin.identity.read');
    expect(read).toEqual(expect.objectContaining({ actor: OPS, details: { view: 'sessions' } }));
  });

  it('pages by cursor, newest first', async () => {
    // b has one session already (the first test's); two newer ones make three.
    t.clock.advance(1);
    await signInFrom(b, '192.0.2.1', UA);
    t.clock.advance(1);
    await signInFrom(b, '192.0.2.2', UA);
    const first = await get(`/identities/${b.identityId}/sessions?limit=2`);
    expect(first.statusCode, first.body).toBe(200);
    const p1 = first.json();
    expect(p1.data.map((s: { ipAddress: string }) => s.ipAddress)).toEqual(['192.0.2.2', '192.0.2.1']);
    expect(p1.meta.pageInfo.hasNextPage).toBe(true);
    const next = await get(
      `/identities/${b.identityId}/sessions?limit=2&after=${encodeURIComponent(p1.meta.pageInfo.nextCursor)}`,
    );
    expect(next.statusCode, next.body).toBe(200);
    expect(next.json().data).toHaveLength(1);
    expect(next.json().meta.pageInfo.hasNextPage).toBe(false);
  });

  it('an unknown identity is 404, a malformed id and a stray query are 400, a tampered cursor refused', async () => {
    const unknown = await get(`/identities/${randomUUID()}/sessions`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('admin.identity_not_found');
    expect((await get('/identities/nope/sessions')).statusCode).toBe(400);
    expect((await get(`/identities/${a.identityId}/sessions?other=1`)).statusCode).toBe(400);
    const tampered = await get(`/identities/${a.identityId}/sessions?after=AAAA`);
    expect(tampered.statusCode).toBe(400);
    expect(tampered.json().code).toMatch(/^collection\.cursor_/);
  });
});

describe('GET /admin/v1/identities/{id}/organizations', () => {
  const create = async (slug: string, owner: Person) => {
    const r = await t.admin!.inject({
      method: 'POST',
      url: '/admin/v1/organizations',
      headers: bearer(ADMIN_KEY),
      payload: { name: slug, slug, ownerIdentityId: owner.identityId },
    });
    expect(r.statusCode, r.body).toBe(201);
    return r.json().data.id as string;
  };

  it('lists the organizations the person belongs to with their role, newest first; not a disabled one; audited', async () => {
    const first = await create(`first-${randomUUID().slice(0, 6)}`, a);
    t.clock.advance(1);
    const second = await create(`second-${randomUUID().slice(0, 6)}`, a);
    t.clock.advance(1);
    const off = await create(`off-${randomUUID().slice(0, 6)}`, a);
    await create(`other-${randomUUID().slice(0, 6)}`, b);
    const disabled = await t.admin!.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${off}/disablements`,
      headers: bearer(ADMIN_KEY),
    });
    expect(disabled.statusCode, disabled.body).toBe(204);

    const r = await get(`/identities/${a.identityId}/organizations`);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().data.map((o: { id: string; role: string }) => [o.id, o.role])).toEqual([
      [second, 'owner'],
      [first, 'owner'],
    ]);
    expect(r.json().data[0]).toEqual({
      id: second,
      name: expect.any(String),
      slug: expect.any(String),
      role: 'owner',
      requireSecondFactor: false,
      joinedAt: expect.any(String),
    });
    const audit = await adminRequest(t.admin!, 'GET', `/audit-records?identityId=${a.identityId}&limit=5`);
    const read = audit.json().data.find((x: { name: string }) => x.name === 'admin.identity.read');
    expect(read).toEqual(expect.objectContaining({ actor: OPS, details: { view: 'organizations' } }));

    const page1 = await get(`/identities/${a.identityId}/organizations?limit=1`);
    expect(page1.json().meta.pageInfo.hasNextPage).toBe(true);
    const page2 = await get(
      `/identities/${a.identityId}/organizations?limit=1&after=${encodeURIComponent(page1.json().meta.pageInfo.nextCursor)}`,
    );
    expect(page2.json().data.map((o: { id: string }) => o.id)).toEqual([first]);

    const unknown = await get(`/identities/${randomUUID()}/organizations`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('admin.identity_not_found');
  });
});
