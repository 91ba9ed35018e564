import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { ADMIN_KEY_NAME, adminRequest, traces } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { bearer, createPerson, type Grant, type Person, signIn } from '../helpers/identities.js';
import { lastCode } from '../helpers/outbox.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  personWithFactor,
  ticketFor,
  totp,
  wrongCode,
} from '../second-factors/helpers.js';

let t: TestApp;
const ACTOR = { actor: `admin:${ADMIN_KEY_NAME}` };
const post = (identityId: string, act: string) =>
  adminRequest(t.admin!, 'POST', `/identities/${identityId}/${act}`);
const detail = async (identityId: string) =>
  (await adminRequest(t.admin!, 'GET', `/identities/${identityId}`)).json().data;

function passwordSignIn(p: Pick<Person, 'email' | 'password'>, meta: { ip?: string; ua?: string } = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    remoteAddress: meta.ip,
    headers: meta.ua ? { 'user-agent': meta.ua } : {},
    payload: { identifierType: 'email', identifier: p.email, password: p.password },
  });
}
const context = (g: Grant) =>
  t.app.inject({ method: 'GET', url: '/api/v1/session/context', headers: bearer(g.accessToken) });
const renew = (g: Grant) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins/renewals',
    payload: { refreshToken: g.refreshToken },
  });

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(() => t.close());

describe('disablements and enablements', () => {
  it('a disabled identity is refused like a wrong password; its sessions end at the next request', async () => {
    const p = await createPerson(t.ctx);
    const grant = await signIn(t.app, p);
    const other = await signIn(t.app, p);
    expect((await context(grant)).statusCode).toBe(200);

    const r = await post(p.identityId, 'disablements');
    expect(r.statusCode, r.body).toBe(204);
    expect(r.body).toBe('');

    const wrong = await passwordSignIn({ email: p.email, password: `${p.password}-wrong` });
    const right = await passwordSignIn(p);
    expect(right.statusCode).toBe(401);
    expect(right.body).toBe(wrong.body);
    expect(right.headers['content-type']).toBe(wrong.headers['content-type']);
    expect(right.json().code).toBe('identity.sign_in_refused');

    for (const g of [grant, other]) {
      const c = await context(g);
      expect(c.statusCode).toBe(401);
      expect(c.json().code).toBe('identity.session_required');
      const n = await renew(g);
      expect(n.statusCode).toBe(401);
      expect(n.json().code).toBe('identity.renewal_refused');
    }
    const d = await detail(p.identityId);
    expect(d.disabledAt).toBe(t.clock.now().toISOString());
    expect(d.liveSessionCount).toBe(0);
    const reasons = await sql<{ revoked_reason: string }>`
      SELECT revoked_reason FROM sessions WHERE identity_id = ${p.identityId}`.execute(t.ctx.database.db);
    expect(reasons.rows.map((x) => x.revoked_reason)).toEqual(['disabled', 'disabled']);

    // Idempotent: the first instant is kept, and each call is audited.
    t.clock.advance(5);
    expect((await post(p.identityId, 'disablements')).statusCode).toBe(204);
    expect((await detail(p.identityId)).disabledAt).toBe(d.disabledAt);
    expect(await auditCount(t, 'identity.disabled', p.identityId)).toBe(2);
    expect(await auditCount(t, 'identity.disabled', ACTOR)).toBeGreaterThanOrEqual(2);

    // Enabled again: sign-ins work; the ended sessions stay ended.
    expect((await post(p.identityId, 'enablements')).statusCode).toBe(204);
    expect((await detail(p.identityId)).disabledAt).toBeNull();
    expect((await passwordSignIn(p)).statusCode).toBe(201);
    expect((await renew(grant)).statusCode).toBe(401);
    expect((await context(grant)).statusCode).toBe(401);
    expect(await auditCount(t, 'identity.enabled', p.identityId)).toBe(1);
    // Enabling an enabled identity changes nothing and is still answered 204.
    expect((await post(p.identityId, 'enablements')).statusCode).toBe(204);
  });
});

describe('a second step begun before the disablement', () => {
  it('is refused with the correct code exactly as with a wrong one', async () => {
    const { person, factor } = await personWithFactor(t);
    const tickets = [await ticketFor(t.app, person), await ticketFor(t.app, person)];
    expect((await post(person.identityId, 'disablements')).statusCode).toBe(204);
    const now = t.clock.now();
    const right = await completeSignIn(t.app, {
      secondFactorTicket: tickets[0],
      code: totp(factor.secret, DEFAULT_POLICY, now),
    });
    const wrong = await completeSignIn(t.app, {
      secondFactorTicket: tickets[1],
      code: wrongCode(factor.secret, DEFAULT_POLICY, now),
    });
    expect(right.statusCode).toBe(401);
    expect(right.json().code).toBe('identity.second_factor_refused');
    expect(right.body).toBe(wrong.body);
    expect((await detail(person.identityId)).liveSessionCount).toBe(0);
  });
});

describe('lock clearances', () => {
  it('clears the failure count and the lock end', async () => {
    const p = await createPerson(t.ctx);
    const until = new Date(t.clock.now().getTime() + 900_000);
    await sql`UPDATE identities SET failed_attempts = 7, locked_until = ${until} WHERE id = ${p.identityId}`.execute(
      t.ctx.database.db,
    );
    expect((await detail(p.identityId)).lock).toEqual({
      failedAttempts: 7,
      lockedUntil: until.toISOString(),
      locked: true,
    });
    expect((await post(p.identityId, 'lock-clearances')).statusCode).toBe(204);
    expect((await detail(p.identityId)).lock).toEqual({
      failedAttempts: 0,
      lockedUntil: null,
      locked: false,
    });
    const record = await sql<{ actor: string; details: unknown }>`
      SELECT actor, details FROM audit_records WHERE name = 'identity.account.lock_cleared' AND target = ${p.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(record.rows).toHaveLength(1);
    expect(record.rows[0].actor).toBe(ACTOR.actor);
    const details = record.rows[0].details;
    expect(typeof details === 'string' ? JSON.parse(details) : details).toEqual({
      wasLocked: true,
      failedAttempts: 7,
    });
  });
});

describe('session revocations', () => {
  it('ends every session at its next request; sign-ins still work', async () => {
    const p = await createPerson(t.ctx);
    const grants = [await signIn(t.app, p), await signIn(t.app, p)];
    expect((await detail(p.identityId)).liveSessionCount).toBe(2);
    expect((await post(p.identityId, 'session-revocations')).statusCode).toBe(204);
    for (const g of grants) {
      expect((await context(g)).statusCode).toBe(401);
      expect((await renew(g)).statusCode).toBe(401);
    }
    expect((await detail(p.identityId)).liveSessionCount).toBe(0);
    const reasons = await sql<{ revoked_reason: string }>`
      SELECT revoked_reason FROM sessions WHERE identity_id = ${p.identityId}`.execute(t.ctx.database.db);
    expect(reasons.rows.map((x) => x.revoked_reason)).toEqual(['ended_by_operator', 'ended_by_operator']);
    const fresh = await signIn(t.app, p);
    expect((await context(fresh)).statusCode).toBe(200);
    expect(await auditCount(t, 'identity.sessions.ended_by_operator', p.identityId)).toBe(1);
  });
});

describe('refusals of every write', () => {
  const acts = ['disablements', 'enablements', 'lock-clearances', 'session-revocations', 'erasures'];

  it('an unknown identity is 404, a malformed id 400, a body-less POST is enough', async () => {
    for (const act of acts) {
      const r = await post(randomUUID(), act);
      expect(r.statusCode, act).toBe(404);
      expect(r.json().code).toBe('admin.identity_not_found');
      const bad = await post('not-a-uuid', act);
      expect(bad.statusCode, act).toBe(400);
      expect(bad.json().code).toBe('validation.failed');
    }
    expect(await auditCount(t, 'identity.erased', ACTOR)).toBe(0);
  });

  it('an erased identity answers 409 to every write, erasure included, and stays disabled', async () => {
    const p = await createPerson(t.ctx);
    expect((await post(p.identityId, 'erasures')).statusCode).toBe(204);
    for (const act of acts) {
      const r = await post(p.identityId, act);
      expect(r.statusCode, act).toBe(409);
      expect(r.json().code).toBe('admin.identity_erased');
    }
    const d = await detail(p.identityId);
    expect(d.disabledAt).not.toBeNull();
    expect(d.erasedAt).not.toBeNull();
    expect(await auditCount(t, 'identity.erased', p.identityId)).toBe(1);
  });
});

describe('erasures', () => {
  it('leaves no trace of the address, the address it came from or its user agent; the chain verifies', async () => {
    const address = `erase-${randomUUID().slice(0, 8)}@example.com`;
    const password = 'violet-anchor-meadow-42';
    const ip = '203.0.113.77';
    const ua = `EraseMe/1.0 (${randomUUID()})`;
    // Registered through the routes, so its challenges are real.
    const form = { identifierType: 'email', identifier: address };
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/sign-ups', payload: { ...form, password } }))
        .statusCode,
    ).toBe(201);
    const code = lastCode(t.config.dataDir, address);
    const confirmed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ups/confirmations',
      payload: { ...form, password, code },
    });
    expect(confirmed.statusCode, confirmed.body).toBe(204);
    const signedIn = await passwordSignIn({ email: address, password }, { ip, ua });
    expect(signedIn.statusCode, signedIn.body).toBe(201);
    const grant = signedIn.json().data as Grant;
    expect(
      (await passwordSignIn({ email: address, password: 'wrong-password!' }, { ip, ua })).statusCode,
    ).toBe(401);
    const { identityId } = (await context(grant)).json().data;
    // Its name (issue 46, item 3), set by the person: in the row, its events and the audit trail.
    const name = {
      givenName: `Given${randomUUID().slice(0, 8)}`,
      familyName: `Family${randomUUID().slice(0, 8)}`,
    };
    const shown = `Shown${randomUUID().slice(0, 8)}`;
    const named = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/account',
      headers: bearer(grant.accessToken),
      payload: { ...name, displayName: shown },
    });
    expect(named.statusCode, named.body).toBe(200);
    // Everything else an identity can hold, written as the features would.
    const db = t.ctx.database.db;
    const sessionId = (
      await sql<{ id: string }>`SELECT id FROM sessions WHERE identity_id = ${identityId}`.execute(db)
    ).rows[0].id;
    await sql`INSERT INTO second_factors (id, identity_id, label, sealed_secret, algorithm, digits, period, created_at, verified_at)
              VALUES (${randomUUID()}, ${identityId}, 'phone', 'sealed', 'SHA1', 6, 30, now(), now())`.execute(
      db,
    );
    await sql`INSERT INTO second_factor_tickets (id, identity_id, ticket_hash, epoch, primary_method, max_attempts, created_at, expires_at)
              VALUES (${randomUUID()}, ${identityId}, ${randomUUID()}, 0, 'password', 5, now(), now())`.execute(
      db,
    );
    await sql`INSERT INTO recovery_codes (id, identity_id, batch_id, code_hash, issued_at)
              VALUES (${randomUUID()}, ${identityId}, ${randomUUID()}, ${randomUUID()}, now())`.execute(db);
    await sql`INSERT INTO passkeys (id, identity_id, credential_id, public_key, sign_count, backup_eligible, backed_up, aaguid, label, created_at)
              VALUES (${randomUUID()}, ${identityId}, 'cred-erase', '\\x01', 0, false, false, ${randomUUID()}, 'laptop', now())`.execute(
      db,
    );
    await sql`INSERT INTO provider_links (id, identity_id, provider, subject, created_at)
              VALUES (${randomUUID()}, ${identityId}, 'acme', ${`subject-${address}`}, now())`.execute(db);
    await sql`INSERT INTO elevations (token_hash, identity_id, session_id, created_at, expires_at)
              VALUES (${randomUUID()}, ${identityId}, ${sessionId}, now(), now())`.execute(db);
    await sql`INSERT INTO webauthn_challenges (id, purpose, challenge_hash, session_id, created_at, expires_at)
              VALUES (${randomUUID()}, 'step_up', ${randomUUID()}, ${sessionId}, now(), now())`.execute(db);
    // A removed identifier, and another identity trying to add the address as its own.
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, removed_at)
              VALUES (${randomUUID()}, ${identityId}, 'email', ${`old-${address}`}, now(), now())`.execute(
      db,
    );
    const stranger = await createPerson(t.ctx);
    await sql`INSERT INTO challenges (id, identity_id, purpose, code_hash, identifier_type, identifier_value, attempts, max_attempts, created_at, expires_at)
              VALUES (${randomUUID()}, ${stranger.identityId}, 'sign_in_method', 'h', 'email', ${address}, 0, 5, now(), now())`.execute(
      db,
    );
    expect(await traces(db, [address, ip, ua])).not.toEqual([]);
    expect(await traces(db, [name.givenName, name.familyName, shown])).not.toEqual([]);

    const r = await post(identityId, 'erasures');
    expect(r.statusCode, r.body).toBe(204);

    expect(
      await traces(db, [address, ip, ua, 'cred-erase', 'laptop', name.givenName, name.familyName, shown]),
    ).toEqual([]);
    const key = deriveKey(t.config.secretsKey, 'audit-seal');
    expect(await verifyChain(db, key)).toMatchObject({ ok: true });
    // On the PostgreSQL server, the operator's own command says so too (PGlite here is in memory,
    // out of another process's reach).
    if (t.db.url && t.db.schema) {
      const verify = spawnSync(process.execPath, ['--import', 'tsx', 'src/audit-verify.ts'], {
        env: {
          ...process.env,
          NODE_ENV: 'test',
          DATABASE_URL: t.db.url,
          PGOPTIONS: `-c search_path=${t.db.schema}`,
          SECRETS_KEY: t.config.secretsKey.toString('base64'),
        },
        encoding: 'utf8',
      });
      expect(verify.status, verify.stdout + verify.stderr).toBe(0);
      expect(verify.stdout).toMatch(/^audit chain intact: \d+ records$/m);
    }
    // The audit trail still names the bare id, and the erasure's own record holds no personal data.
    const records = (await adminRequest(t.admin!, 'GET', `/audit-records?identityId=${identityId}`)).json()
      .data;
    expect(records[0]).toMatchObject({
      name: 'identity.erased',
      actor: ACTOR.actor,
      target: identityId,
      verified: true,
    });
    expect(records.map((x: { name: string }) => x.name)).toContain('identity.sign_up.requested');
    expect(records.every((x: { verified: boolean }) => x.verified)).toBe(true);

    // Its sessions are dead, its refresh token refused, and it cannot sign in.
    expect((await context(grant)).statusCode).toBe(401);
    expect((await renew(grant)).statusCode).toBe(401);
    expect((await passwordSignIn({ email: address, password })).statusCode).toBe(401);
    const d = await detail(identityId);
    expect(d).toMatchObject({
      id: identityId,
      identifiers: [],
      methods: [],
      secondFactors: [],
      recoveryCodesRemaining: 0,
      lock: { failedAttempts: 0, lockedUntil: null, locked: false },
      liveSessionCount: 0,
      givenName: null,
      familyName: null,
      displayName: null,
      name: null,
    });
    expect(d.erasedAt).toBe(t.clock.now().toISOString());
    expect(d.disabledAt).toBe(d.erasedAt);
    const left = await sql<{ n: number }>`
      SELECT (SELECT count(*) FROM sessions WHERE identity_id = ${identityId} AND revoked_at IS NULL)::int
           + (SELECT count(*) FROM sessions WHERE identity_id = ${identityId} AND (ip_address IS NOT NULL OR user_agent IS NOT NULL))::int
           + (SELECT count(*) FROM sign_in_attempts WHERE identity_id = ${identityId} AND (ip_address IS NOT NULL OR user_agent IS NOT NULL))::int
           + (SELECT count(*) FROM identities WHERE id = ${identityId} AND password_hash IS NOT NULL)::int AS n`.execute(
      db,
    );
    expect(left.rows[0].n).toBe(0);
    // The history keeps its instants and outcomes.
    const attempts = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sign_in_attempts WHERE identity_id = ${identityId}`.execute(db);
    expect(attempts.rows[0].n).toBeGreaterThanOrEqual(2);

    // A later sign-up with the same address starts a new identity.
    const again = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ups',
      payload: { ...form, password },
    });
    expect(again.statusCode, again.body).toBe(201);
    const found = await adminRequest(
      t.admin!,
      'GET',
      `/identities?identifierType=email&identifier=${encodeURIComponent(address)}`,
    );
    const ids = found.json().data.map((i: { id: string }) => i.id);
    expect(ids).toHaveLength(1);
    expect(ids[0]).not.toBe(identityId);
    // The stranger is untouched.
    expect((await detail(stranger.identityId)).identifiers).toHaveLength(1);
  });
});
