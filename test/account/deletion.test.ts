import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSessionCookieName } from '../../src/features/sessions/browser-session.js';
import { verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { traces } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { bearer, createPerson, type Grant, type Person, signIn } from '../helpers/identities.js';
import { bodyOf, mailCode, mailCount, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { createOrganization, join } from '../organizations/support.js';

// The person's own deletion (POST /account/deletions): the operator's erasure, acted by its owner.
let sink: SmtpSink;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createTestApp({
    env: { SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SECURITY_NOTICES: 'on' },
  });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

/** An elevation through the real step-up routes, its code read from the SMTP sink. */
async function elevate(p: Person, g: Grant): Promise<string> {
  const before = mailCount(sink, p.email);
  const start = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups',
    headers: bearer(g.accessToken),
    payload: { channel: 'identifier' },
  });
  expect(start.statusCode, start.body).toBe(201);
  const code = await mailCode(sink, p.email, before + 1);
  const confirm = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups/confirmations',
    headers: bearer(g.accessToken),
    payload: { challengeId: start.json().data.challengeId, code },
  });
  expect(confirm.statusCode, confirm.body).toBe(201);
  return confirm.json().data.elevationToken;
}

function deletion(g: Grant, identifier: unknown, elevation?: string, extra: Record<string, unknown> = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/account/deletions',
    headers: {
      ...bearer(g.accessToken),
      ...(elevation ? { 'x-elevation-token': elevation } : {}),
      'user-agent': 'DeleteMe/1.0',
    },
    remoteAddress: '198.51.100.61',
    payload: { identifier, ...extra },
  });
}

const context = (g: Grant) =>
  t.app.inject({ method: 'GET', url: '/api/v1/session/context', headers: bearer(g.accessToken) });

/** Everything about the identity that a refused deletion must leave as it was. */
async function state(identityId: string) {
  const r = await sql<Record<string, unknown>>`
    SELECT i.erased_at, i.disabled_at, i.session_epoch,
      (SELECT count(*)::int FROM identifiers f WHERE f.identity_id = i.id) AS identifiers,
      (SELECT count(*)::int FROM sessions s WHERE s.identity_id = i.id AND s.revoked_at IS NULL) AS live,
      (SELECT count(*)::int FROM organization_memberships m WHERE m.identity_id = i.id) AS memberships,
      (SELECT count(*)::int FROM events e WHERE e.identity_id = i.id) AS events
    FROM identities i WHERE i.id = ${identityId}`.execute(t.ctx.database.db);
  return r.rows[0];
}

const deletionMails = (to: string) =>
  sink.received.filter((m) => m.to.includes(to) && /^Subject: Your account was deleted/m.test(m.raw));

describe('POST /account/deletions', () => {
  it('requires a session, then a live elevation of that session', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const other = await signIn(t.app, p);
    const before = await state(p.identityId);
    const none = await t.app.inject({
      method: 'POST',
      url: '/api/v1/account/deletions',
      payload: { identifier: p.email },
    });
    expect(none.statusCode).toBe(401);
    expect(none.json().code).toBe('identity.session_required');
    const unelevated = await deletion(g, p.email);
    expect(unelevated.statusCode).toBe(403);
    expect(unelevated.json().code).toBe('identity.elevation_required');
    // An elevation of another session of the same identity is not this session's.
    const foreign = await elevate(p, other);
    const wrongSession = await deletion(g, p.email, foreign);
    expect(wrongSession.statusCode).toBe(403);
    expect(wrongSession.json().code).toBe('identity.elevation_required');
    expect(await state(p.identityId)).toEqual(before);
    expect((await context(g)).statusCode).toBe(200);
  });

  it('a strict body: an unknown property or a missing identifier is 400, and nothing changes', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const elevation = await elevate(p, g);
    const before = await state(p.identityId);
    for (const res of [
      await deletion(g, p.email, elevation, { confirm: true }),
      await deletion(g, undefined, elevation),
      await deletion(g, '', elevation),
    ]) {
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation.failed');
      expect(res.body).not.toContain(p.email);
    }
    expect(await state(p.identityId)).toEqual(before);
  });

  it('a wrong identifier typed is 422 identity.account_deletion_refused, and nothing changes', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const elevation = await elevate(p, g);
    const before = await state(p.identityId);
    const audits = await auditCount(t, 'identity.erased', p.identityId);
    for (const typed of [`x${p.email}`, 'someone@example.com', 'DELETE', '+33612345678']) {
      const res = await deletion(g, typed, elevation);
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().code).toBe('identity.account_deletion_refused');
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    expect(await state(p.identityId)).toEqual(before);
    expect(await auditCount(t, 'identity.erased', p.identityId)).toBe(audits);
    expect((await context(g)).statusCode).toBe(200);
    await t.ctx.securityNotices.idle();
    expect(deletionMails(p.email)).toEqual([]);
  });

  it('the last owner of an organization with other members is refused (409) and nothing changes', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const colleague = await createPerson(t.ctx);
    const org = await createOrganization(t, g.accessToken);
    await join(t, org.id, colleague.identityId, 'admin');
    const elevation = await elevate(p, g);
    const before = await state(p.identityId);
    const res = await deletion(g, p.email.toUpperCase(), elevation);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json()).toMatchObject({
      code: 'identity.account_deletion_last_owner',
      detail: expect.stringContaining('make another member an owner'),
    });
    expect(await state(p.identityId)).toEqual(before);
    expect((await context(g)).statusCode).toBe(200);
    // Once the colleague is an owner too, the same deletion goes through; the organization stays.
    await sql`UPDATE organization_memberships SET role = 'owner' WHERE identity_id = ${colleague.identityId}`.execute(
      t.ctx.database.db,
    );
    const again = await deletion(g, p.email, elevation);
    expect(again.statusCode, again.body).toBe(204);
    const left = await sql<{ identity_id: string; role: string }>`
      SELECT identity_id, role FROM organization_memberships WHERE organization_id = ${org.id}`.execute(
      t.ctx.database.db,
    );
    expect(left.rows).toEqual([{ identity_id: colleague.identityId, role: 'owner' }]);
  });

  it('success: the erasure, every session ended, its events, the audit record, the notice, the cookie cleared', async () => {
    const address = `self-${randomUUID().slice(0, 8)}@example.com`;
    const p = await createPerson(t.ctx, address);
    const g = await signIn(t.app, p);
    const other = await signIn(t.app, p);
    // An organization of one member goes with it.
    const alone = await createOrganization(t, g.accessToken);
    const elevation = await elevate(p, g);
    await t.ctx.securityNotices.idle();
    const mailsBefore = mailCount(sink, address);

    // Typed in another case, with a stray space: still the account's address.
    const res = await deletion(g, ` ${address.toUpperCase()}`, elevation);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toContain(`${browserSessionCookieName(t.config.publicOrigin)}=;`);
    expect(cookie).toContain('Max-Age=0');

    // Every session is refused at its next request; the bare id is kept, erased and disabled.
    for (const grant of [g, other]) {
      const c = await context(grant);
      expect(c.statusCode).toBe(401);
      expect(c.json().code).toBe('identity.session_required');
    }
    const after = await state(p.identityId);
    expect(after).toMatchObject({ identifiers: 0, live: 0, memberships: 0 });
    expect(after.erased_at).not.toBeNull();
    expect(after.disabled_at).not.toBeNull();
    const org = await sql`SELECT id FROM organizations WHERE id = ${alone.id}`.execute(t.ctx.database.db);
    expect(org.rows).toEqual([]);
    // Signing in again with the address is refused like any unknown account.
    const signInAgain = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: address, password: p.password },
    });
    expect(signInAgain.statusCode).toBe(401);

    // The operator's erasure's records, actor the identity itself.
    expect(await auditCount(t, 'identity.erased', { actor: p.identityId })).toBe(1);
    const events = await sql<{ type: string; actor: string; reason: string | null }>`
      SELECT type, actor, data->>'reason' AS reason FROM events
      WHERE identity_id = ${p.identityId} AND type IN ('identity.erased', 'session.ended')
      ORDER BY appended`.execute(t.ctx.database.db);
    expect(events.rows).toEqual([
      { type: 'session.ended', actor: p.identityId, reason: 'erased' },
      { type: 'session.ended', actor: p.identityId, reason: 'erased' },
      { type: 'identity.erased', actor: p.identityId, reason: null },
    ]);
    const db = t.ctx.database.db;
    expect(await verifyChain(db, deriveKey(t.config.secretsKey, 'audit-seal'))).toMatchObject({ ok: true });

    // The notice, at the address the account had; and no row keeps the address.
    await t.ctx.securityNotices.idle();
    const mails = deletionMails(address);
    expect(mails).toHaveLength(1);
    expect(mailCount(sink, address)).toBe(mailsBefore + 1);
    const text = bodyOf(mails[0].raw).replace(/=\r?\n/g, '');
    expect(text).toContain('Your account was deleted at your request.');
    expect(text).toContain('From address: 198.51.100.61');
    expect(await traces(db, [address])).toEqual([]);

    // A repeat with the same (ended) session: 401, nothing more happens.
    const repeat = await deletion(g, address, elevation);
    expect(repeat.statusCode).toBe(401);
    expect(await auditCount(t, 'identity.erased', { actor: p.identityId })).toBe(1);
  });

  it('a phone number typed in its national form confirms; without any identifier, DELETE does', async () => {
    const p = await createPerson(t.ctx);
    const g = await signIn(t.app, p);
    const elevation = await elevate(p, g);
    const db = t.ctx.database.db;
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${p.identityId}, 'phone', '+33612345678', now(), now())`.execute(db);
    expect((await deletion(g, '06 12 34 56 79', elevation)).statusCode).toBe(422);
    expect((await deletion(g, '06 12 34 56 78', elevation)).statusCode).toBe(204);

    // An identity whose identifiers were all removed (a provider or passkey its only way in).
    const q = await createPerson(t.ctx);
    const h = await signIn(t.app, q);
    const qElevation = await elevate(q, h);
    await sql`UPDATE identifiers SET removed_at = now() WHERE identity_id = ${q.identityId}`.execute(db);
    expect((await deletion(h, q.email, qElevation)).statusCode).toBe(422);
    expect((await deletion(h, 'DELETE', qElevation)).statusCode).toBe(204);
  });
});

describe('SECURITY_NOTICES off', () => {
  it('the deletion goes through and no notice is sent', async () => {
    const quiet = await createTestApp({
      db: t.db,
      env: {
        SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        SECURITY_NOTICES: 'off',
        SECRETS_KEY: t.config.secretsKey.toString('base64'),
      },
    });
    try {
      const p = await createPerson(quiet.ctx);
      const g = await signIn(quiet.app, p);
      const before = mailCount(sink, p.email);
      const start = await quiet.app.inject({
        method: 'POST',
        url: '/api/v1/step-ups',
        headers: bearer(g.accessToken),
        payload: { channel: 'identifier' },
      });
      const code = await mailCode(sink, p.email, before + 1);
      const confirm = await quiet.app.inject({
        method: 'POST',
        url: '/api/v1/step-ups/confirmations',
        headers: bearer(g.accessToken),
        payload: { challengeId: start.json().data.challengeId, code },
      });
      const res = await quiet.app.inject({
        method: 'POST',
        url: '/api/v1/account/deletions',
        headers: { ...bearer(g.accessToken), 'x-elevation-token': confirm.json().data.elevationToken },
        payload: { identifier: p.email },
      });
      expect(res.statusCode, res.body).toBe(204);
      await quiet.ctx.securityNotices.idle();
      expect(deletionMails(p.email)).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});
