import { sql } from 'kysely';
import { afterEach, describe, expect, test } from 'vitest';
import { bumpSessionEpoch } from '../../src/features/identities/repository.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, signIn } from '../helpers/identities.js';

// Faults injected at the one seam after the renewal's rotation: the access-token signer (a failure
// there takes the rotation back). Concurrent renewals are the race suite's; the database and
// routes are real.
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

  test('a failed signing takes back exactly the rotation it made; an older token stays spent', async () => {
    t = await createTestApp();
    const grant = await signIn(t.app, await createPerson(t.ctx));
    const sid = sessionIdOf(grant.accessToken);
    const sign = t.ctx.tokens.sign.bind(t.ctx.tokens);
    // Two honest rotations, then a failed one: the undo moves back exactly one generation.
    const second = (await renew(grant.refreshToken)).json().data.refreshToken as string;
    t.ctx.tokens.sign = async () => {
      throw new Error('signer unavailable');
    };
    expect((await renew(second)).statusCode).toBe(500);
    expect(await tokenRows(sid)).toEqual([
      { generation: 1, spent: true },
      { generation: 2, spent: false },
    ]);
    t.ctx.tokens.sign = sign;
    // The first token stays spent: presenting it is still a replay.
    const replay = await renew(grant.refreshToken);
    expect(replay.statusCode).toBe(401);
    const session = await sql<{ revoked_reason: string | null; generation: number }>`
      SELECT revoked_reason, generation FROM sessions WHERE id = ${sid}`.execute(t.ctx.database.db);
    expect(session.rows[0]).toEqual({ revoked_reason: 'refresh_token_replayed', generation: 2 });
  });

  test('a session whose identity signed out everywhere is refused without rotating, not taken for a replay', async () => {
    t = await createTestApp();
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const sid = sessionIdOf(grant.accessToken);
    await bumpSessionEpoch(t.ctx.database.db, person.identityId);
    const res = await renew(grant.refreshToken);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('identity.renewal_refused');
    expect(await tokenRows(sid)).toEqual([{ generation: 1, spent: false }]);
    const session = await sql<{ revoked_at: Date | null }>`
      SELECT revoked_at FROM sessions WHERE id = ${sid}`.execute(t.ctx.database.db);
    // Refused, not treated as replay: the session is dead by its epoch, not revoked as stolen.
    expect(session.rows[0].revoked_at).toBeNull();
  });
});
