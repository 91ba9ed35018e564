import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson } from '../helpers/identities.js';

const EXPORT = '/api/v1/account/export';
const UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /account/export', () => {
  it('hands the owner everything held about them, identifiers unmasked, and never a secret or hash', async () => {
    const who = await elevatedPerson(t);
    // A second factor and a batch of recovery codes, so their secrets exist to be left out.
    const enrol = await t.app.inject({
      method: 'POST',
      url: '/api/v1/recovery-codes',
      headers: who.headers,
    });
    expect(enrol.statusCode).toBe(201);
    const codes: string[] = enrol.json().data.recoveryCodes;
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: who.person.email, password: who.person.password },
      headers: { 'user-agent': UA },
      remoteAddress: '203.0.113.7',
    });
    expect(second.statusCode).toBe(201);
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: who.person.email, password: 'wrong password here' },
      remoteAddress: '198.51.100.4',
    });

    const res = await t.app.inject({ method: 'GET', url: EXPORT, headers: bearer(who.grant.accessToken) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const doc = res.json().data;
    expect(doc.identity.id).toBe(who.person.identityId);
    expect(doc.identity.password.set).toBe(true);
    expect(doc.identifiers).toEqual([
      expect.objectContaining({ type: 'email', value: who.person.email, verifiedAt: expect.any(String) }),
    ]);
    expect(doc.recoveryCodes.remaining).toBe(10);
    expect(doc.sessions.length).toBeGreaterThanOrEqual(2);
    expect(doc.sessions).toContainEqual(
      expect.objectContaining({
        ipAddress: '203.0.113.7',
        userAgent: UA,
        device: expect.objectContaining({ description: 'Chrome 156 on Linux' }),
        endedAt: null,
      }),
    );
    expect(doc.signInHistory).toContainEqual(
      expect.objectContaining({ outcome: 'refused', ipAddress: '198.51.100.4', method: 'password' }),
    );
    expect(doc.auditRecords.map((r: { name: string }) => r.name)).toContain('identity.recovery_codes.issued');

    // Nothing secret: no token, code, hash, seal or sealed value.
    const stored = await sql<{ password_hash: string; code_hash: string; seal: string }>`
      SELECT i.password_hash, (SELECT code_hash FROM recovery_codes WHERE identity_id = i.id LIMIT 1) AS code_hash,
             (SELECT seal FROM audit_records WHERE actor = i.id::text ORDER BY seq LIMIT 1) AS seal
      FROM identities i WHERE i.id = ${who.person.identityId}`.execute(t.db.database.db);
    const { password_hash, code_hash, seal } = stored.rows[0];
    for (const secret of [
      who.grant.accessToken,
      who.grant.refreshToken,
      who.elevation,
      who.person.password,
      password_hash,
      code_hash,
      seal,
      ...codes,
      second.json().data.refreshToken,
    ]) {
      expect(res.body).not.toContain(secret);
    }
    expect(res.body).not.toMatch(/argon2|sealed|_hash|seal"/i);

    // The export is on the record.
    const audit = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM audit_records WHERE name = 'identity.account.exported' AND actor = ${who.person.identityId}`.execute(
      t.db.database.db,
    );
    expect(audit.rows[0].n).toBe(1);
  });

  it('refuses without a session', async () => {
    const res = await t.app.inject({ method: 'GET', url: EXPORT });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('identity.session_required');
    expect(res.body).not.toContain('@');
  });

  it('is rate limited per address (RATE_LIMIT_ACCOUNT_EXPORTS), with Retry-After', async () => {
    const limited = await createTestApp({ env: { RATE_LIMIT_ACCOUNT_EXPORTS: '2/3600' } });
    try {
      const p = await createPerson(limited.ctx);
      const signedIn = await limited.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ins',
        payload: { identifierType: 'email', identifier: p.email, password: p.password },
      });
      const headers = bearer(signedIn.json().data.accessToken);
      const statuses: number[] = [];
      let last = undefined as Awaited<ReturnType<typeof limited.app.inject>> | undefined;
      for (let i = 0; i < 3; i++) {
        last = await limited.app.inject({ method: 'GET', url: EXPORT, headers });
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([200, 200, 429]);
      expect(last?.json().code).toBe('rate_limit.exceeded');
      expect(Number(last?.headers['retry-after'])).toBeGreaterThan(0);
      expect(last?.body).not.toContain(p.email);
    } finally {
      await limited.close();
    }
  });
});
