import { sql } from 'kysely';
import { afterEach, describe, expect, test } from 'vitest';
import { bumpSessionEpoch } from '../../src/features/identities/repository.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, signIn } from '../helpers/identities.js';

// Faults injected at the one seam between the renewal's lookup and its locked rotation: the
// access-token signer. The database and routes are real.
describe('renewal faults', () => {
  let t: TestApp;
  afterEach(async () => t?.close());

  const renew = (refreshToken: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/sign-ins/renewals', payload: { refreshToken } });

  async function tokenRows(sessionId: string) {
    const r = await sql<{ generation: number; spent: boolean }>`
      SELECT generation, spent_at IS NOT NULL AS spent FROM refresh_tokens WHERE session_id = ${sessionId}
      ORDER BY generation`.execute(t.ctx.database.db);
    return r.rows;
  }

  function sessionIdOf(accessToken: string): string {
    return JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).sid;
  }

  test('if signing the access token fails, nothing rotates and the presented token still works', async () => {
    t = await createTestApp();
    const grant = await signIn(t.app, await createPerson(t.ctx));
    const sid = sessionIdOf(grant.accessToken);
    const sign = t.ctx.tokens.sign.bind(t.ctx.tokens);
    t.ctx.tokens.sign = async () => {
      throw new Error('signer unavailable');
    };
    const failed = await renew(grant.refreshToken);
    expect(failed.statusCode).toBe(500);
    expect(failed.json().code).toBe('internal.unexpected');
    expect(await tokenRows(sid)).toEqual([{ generation: 1, spent: false }]);

    t.ctx.tokens.sign = sign;
    const ok = await renew(grant.refreshToken);
    expect(ok.statusCode).toBe(201);
    expect(await tokenRows(sid)).toEqual([
      { generation: 1, spent: true },
      { generation: 2, spent: false },
    ]);
  });

  test('a session revoked between lookup and lock is refused without rotating', async () => {
    t = await createTestApp();
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const sid = sessionIdOf(grant.accessToken);
    const sign = t.ctx.tokens.sign.bind(t.ctx.tokens);
    // Signing runs after the lookup and before the locked rotation: revoke the credential there.
    t.ctx.tokens.sign = async (identityId, sessionId) => {
      await bumpSessionEpoch(t.ctx.database.db, person.identityId);
      return sign(identityId, sessionId);
    };
    const res = await renew(grant.refreshToken);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('identity.renewal_refused');
    expect(await tokenRows(sid)).toEqual([{ generation: 1, spent: false }]);
    const session = await sql<{ revoked_at: Date | null }>`
      SELECT revoked_at FROM sessions WHERE id = ${sid}`.execute(t.ctx.database.db);
    // Refused, not treated as replay: the session is dead by its epoch, not revoked as stolen.
    expect(session.rows[0].revoked_at).toBeNull();
  });

  test('a token spent between lookup and lock is a replay: the session is revoked', async () => {
    t = await createTestApp();
    const grant = await signIn(t.app, await createPerson(t.ctx));
    const sid = sessionIdOf(grant.accessToken);
    const sign = t.ctx.tokens.sign.bind(t.ctx.tokens);
    let once = true;
    t.ctx.tokens.sign = async (identityId, sessionId) => {
      if (once) {
        once = false;
        // Another renewal of the same token completes while this one is between its two steps.
        expect((await renew(grant.refreshToken)).statusCode).toBe(201);
      }
      return sign(identityId, sessionId);
    };
    const res = await renew(grant.refreshToken);
    expect(res.statusCode).toBe(401);
    const session = await sql<{ revoked_reason: string | null }>`
      SELECT revoked_reason FROM sessions WHERE id = ${sid}`.execute(t.ctx.database.db);
    expect(session.rows[0].revoked_reason).toBe('refresh_token_replayed');
  });
});
