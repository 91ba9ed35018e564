import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { CHROME_LINUX, SAFARI_IPHONE, signInFrom } from '../helpers/devices.js';
import { bearer, createPerson } from '../helpers/identities.js';
import { context, RENEWALS, refusalShape, signInRaw } from './support.js';

const SESSIONS = '/api/v1/sessions';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function sessionIdOf(accessToken: string): Promise<string> {
  return (await context(t.app, accessToken)).json().data.sessionId;
}

const list = (accessToken: string, query = '') =>
  t.app.inject({ method: 'GET', url: `${SESSIONS}${query}`, headers: bearer(accessToken) });

const revoke = (accessToken: string, id: string) =>
  t.app.inject({ method: 'POST', url: `${SESSIONS}/${id}/revocations`, headers: bearer(accessToken) });

describe('GET /sessions', () => {
  it('lists the live sessions newest first with device, address and the current one marked; never a token', async () => {
    const p = await createPerson(t.ctx);
    const laptop = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    t.clock.advance(60);
    const phone = await signInFrom(t, p, SAFARI_IPHONE, '2001:db8:1:2::5');
    t.clock.advance(60);
    const ended = await signInFrom(t, p, CHROME_LINUX, '198.51.100.9');
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/sign-outs', headers: bearer(ended.accessToken) }))
        .statusCode,
    ).toBe(204);

    const res = await list(phone.accessToken);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.meta.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
    const [first, second] = body.data;
    expect(body.data).toHaveLength(2);
    expect(first).toMatchObject({
      id: await sessionIdOf(phone.accessToken),
      method: 'password',
      ipAddress: '2001:db8:1:2::5',
      current: true,
      device: { browser: 'Mobile Safari 17', os: 'iOS 17.5', type: 'mobile' },
    });
    expect(first.device.description).toBe('Mobile Safari 17 on iOS 17.5 (mobile)');
    expect(second).toMatchObject({
      id: await sessionIdOf(laptop.accessToken),
      ipAddress: '203.0.113.7',
      current: false,
      device: { description: 'Chrome 156 on Linux', type: 'desktop' },
    });
    expect(Date.parse(second.createdAt)).toBeLessThan(Date.parse(first.createdAt));
    expect(second.sessionExpiresAt).toBe(
      new Date(Date.parse(second.createdAt) + 30 * 86400_000).toISOString(),
    );
    for (const secret of [laptop.accessToken, laptop.refreshToken, phone.accessToken, phone.refreshToken]) {
      expect(res.body).not.toContain(secret);
    }
    // The sign-in history names the device the same way.
    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history?limit=3',
      headers: bearer(phone.accessToken),
    });
    expect(history.json().data.map((e: { device: { description: string } }) => e.device.description)).toEqual(
      ['Chrome 156 on Linux', 'Mobile Safari 17 on iOS 17.5 (mobile)', 'Chrome 156 on Linux'],
    );
  });

  it('lastActiveAt moves with a renewal; pages carry a cursor bound to the caller', async () => {
    const p = await createPerson(t.ctx);
    const a = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    t.clock.advance(1);
    await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    t.clock.advance(5 * 60);
    const renewed = await t.app.inject({
      method: 'POST',
      url: RENEWALS,
      payload: { refreshToken: a.refreshToken },
    });
    expect(renewed.statusCode).toBe(201);
    const access = renewed.json().data.accessToken;

    const firstPage = await list(access, '?limit=1');
    expect(firstPage.json().data).toHaveLength(1);
    const { hasNextPage, nextCursor } = firstPage.json().meta.pageInfo;
    expect(hasNextPage).toBe(true);
    const secondPage = await list(access, `?limit=1&after=${encodeURIComponent(nextCursor)}`);
    expect(secondPage.statusCode).toBe(200);
    const own = secondPage.json().data[0];
    expect(own.current).toBe(true);
    expect(own.lastActiveAt).toBe(t.clock.now().toISOString());
    expect(Date.parse(own.lastActiveAt)).toBeGreaterThan(Date.parse(own.createdAt));
    expect(secondPage.json().meta.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });

    // Someone else's cursor is refused.
    const other = await createPerson(t.ctx);
    const theirs = await signInFrom(t, other, CHROME_LINUX, '203.0.113.8');
    const foreign = await list(theirs.accessToken, `?limit=1&after=${encodeURIComponent(nextCursor)}`);
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().code).toBe('collection.cursor_invalid');
  });

  it('refuses without a live session, and refuses unknown query parameters', async () => {
    const res = await t.app.inject({ method: 'GET', url: SESSIONS });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('identity.session_required');
    const p = await createPerson(t.ctx);
    const g = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const sorted = await list(g.accessToken, '?sort=created_at');
    expect(sorted.statusCode).toBe(400);
    expect(sorted.json().code).toBe('validation.failed');
  });
});

describe('POST /sessions/{id}/revocations', () => {
  it("ends another device's session at its next request and its refresh token with it; audited", async () => {
    const p = await createPerson(t.ctx);
    const laptop = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const phone = await signInFrom(t, p, SAFARI_IPHONE, '203.0.113.99');
    const phoneId = await sessionIdOf(phone.accessToken);

    const res = await revoke(laptop.accessToken, phoneId);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await context(t.app, phone.accessToken)).statusCode).toBe(401);
    const renewal = await t.app.inject({
      method: 'POST',
      url: RENEWALS,
      payload: { refreshToken: phone.refreshToken },
    });
    expect(renewal.statusCode).toBe(401);
    expect(renewal.json().code).toBe('identity.renewal_refused');
    // The caller's own session is untouched and no longer lists the ended one.
    const left = (await list(laptop.accessToken)).json().data.map((s: { id: string }) => s.id);
    expect(left).toEqual([await sessionIdOf(laptop.accessToken)]);

    const row = await sql<{
      revoked_reason: string;
    }>`SELECT revoked_reason FROM sessions WHERE id = ${phoneId}`.execute(t.db.database.db);
    expect(row.rows[0].revoked_reason).toBe('revoked_by_owner');
    const audit = await sql<{ actor: string; target: string; details: { sessionId: string } }>`
      SELECT actor, target, details FROM audit_records WHERE name = 'identity.session.revoked' AND actor = ${p.identityId}`.execute(
      t.db.database.db,
    );
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0]).toMatchObject({ target: p.identityId, details: { sessionId: phoneId } });
    expect((await verifyChain(t.db.database.db, deriveKey(t.config.secretsKey, 'audit-seal'))).ok).toBe(true);
  });

  it("the caller's own id works like sign-out", async () => {
    const p = await createPerson(t.ctx);
    const g = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const res = await revoke(g.accessToken, await sessionIdOf(g.accessToken));
    expect(res.statusCode).toBe(204);
    expect((await context(t.app, g.accessToken)).statusCode).toBe(401);
    expect((await list(g.accessToken)).statusCode).toBe(401);
  });

  it("an unknown id, another identity's session and an ended one answer the identical 404", async () => {
    const p = await createPerson(t.ctx);
    const mine = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const second = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const secondId = await sessionIdOf(second.accessToken);
    expect((await revoke(mine.accessToken, secondId)).statusCode).toBe(204);
    const stranger = await createPerson(t.ctx);
    const theirs = await signInFrom(t, stranger, CHROME_LINUX, '203.0.113.8');
    const theirsId = await sessionIdOf(theirs.accessToken);

    const unknown = await revoke(mine.accessToken, randomUUID());
    const foreign = await revoke(mine.accessToken, theirsId);
    const ended = await revoke(mine.accessToken, secondId);
    for (const res of [unknown, foreign, ended]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('identity.session_not_found');
      expect(refusalShape(res)).toEqual(refusalShape(unknown));
    }
    expect(foreign.body).toBe(unknown.body);
    expect(ended.body).toBe(unknown.body);
    // The stranger's session was not touched.
    expect((await context(t.app, theirs.accessToken)).statusCode).toBe(200);
  });

  it('refuses a malformed id (400) and a missing session (401), changing nothing', async () => {
    const p = await createPerson(t.ctx);
    const g = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const bad = await revoke(g.accessToken, 'not-a-uuid');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('validation.failed');
    const anonymous = await t.app.inject({ method: 'POST', url: `${SESSIONS}/${randomUUID()}/revocations` });
    expect(anonymous.statusCode).toBe(401);
    expect((await context(t.app, g.accessToken)).statusCode).toBe(200);
  });
});

describe('signInRaw fixture', () => {
  it('records the default user agent of inject on the session', async () => {
    const p = await createPerson(t.ctx);
    const res = await signInRaw(t.app, p.email, p.password);
    const row = await sql<{ user_agent: string; ip_address: string }>`
      SELECT user_agent, ip_address FROM sessions WHERE identity_id = ${p.identityId}`.execute(
      t.db.database.db,
    );
    expect(res.statusCode).toBe(201);
    expect(row.rows[0].user_agent).toBe('lightMyRequest');
    expect(row.rows[0].ip_address).toBe('127.0.0.1');
  });
});

describe('two instances on one database', () => {
  it('a session ended from another device on instance A is refused at its next request on instance B', async () => {
    // The same deployment: one SECRETS_KEY (it seals the signing key kept in the database).
    const b = await createTestApp({
      db: t.db,
      clock: t.clock,
      env: { SECRETS_KEY: t.config.secretsKey.toString('base64') },
    });
    try {
      const p = await createPerson(t.ctx);
      const laptop = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
      const phone = await signInFrom(t, p, SAFARI_IPHONE, '203.0.113.9');
      // Instance B has seen (and cached the signature of) the phone's token.
      expect((await context(b.app, phone.accessToken)).statusCode).toBe(200);
      expect((await revoke(laptop.accessToken, await sessionIdOf(phone.accessToken))).statusCode).toBe(204);
      expect((await context(b.app, phone.accessToken)).statusCode).toBe(401);
      const renewal = await b.app.inject({
        method: 'POST',
        url: RENEWALS,
        payload: { refreshToken: phone.refreshToken },
      });
      expect(renewal.statusCode).toBe(401);
      expect((await context(b.app, laptop.accessToken)).statusCode).toBe(200);
    } finally {
      await b.close();
    }
  });
});
