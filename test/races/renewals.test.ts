import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { createPerson, type Grant, race, signIn } from '../helpers/identities.js';
import { context, renew, sessionRow, sidOf } from '../sessions/support.js';
import { expectRefusals, ROUNDS, raceApp, statuses, times } from './support.js';

// Race 1 (interface 3, 4.3): renewals of one refresh token.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

describe('20 simultaneous renewals of one refresh token', () => {
  it(`one 201, nineteen 401; the late ones are replays that end the session (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    for (let round = 0; round < ROUNDS; round++) {
      const person = await createPerson(t.ctx);
      const bystander = await signIn(t.app, person);
      const grant = await signIn(t.app, person);
      const sid = sidOf(grant.accessToken);

      const answers = await race(20, () => renew(t.app, grant.refreshToken));

      expect(statuses(answers), `round ${round}`).toEqual([201, ...times(19, 401)]);
      expectRefusals(
        answers.filter((r) => r.statusCode !== 201),
        401,
        'identity.renewal_refused',
      );
      const won = answers.find((r) => r.statusCode === 201)!.json().data as Grant;
      expect(won.kind).toBe('session');
      expect(sidOf(won.accessToken)).toBe(sid);
      expect(won.sessionExpiresAt).toBe(grant.sessionExpiresAt);
      expect(won.refreshToken).not.toBe(grant.refreshToken);

      // Exactly one rotation: generation 2, one new token row, the presented one spent once.
      const row = await sessionRow(db, sid);
      expect(row.generation).toBe(2);
      // Every loser waited on the token row and then saw it spent: a replay, which ends the session.
      expect(row.revoked_at).not.toBeNull();
      expect(row.revoked_reason).toBe('refresh_token_replayed');
      const tokens = await sql<{ generation: number; spent: boolean }>`
        SELECT generation, spent_at IS NOT NULL AS spent FROM refresh_tokens
        WHERE session_id = ${sid} ORDER BY generation`.execute(db);
      expect(tokens.rows).toEqual([
        { generation: 1, spent: true },
        { generation: 2, spent: false },
      ]);

      // The winner's pair died with the session; the first revocation reason is kept.
      expectRefusals([await renew(t.app, won.refreshToken)], 401, 'identity.renewal_refused');
      expectRefusals([await context(t.app, won.accessToken)], 401, 'identity.session_required');
      expectRefusals([await context(t.app, grant.accessToken)], 401, 'identity.session_required');
      const after = await sessionRow(db, sid);
      expect(after.revoked_reason).toBe('refresh_token_replayed');
      expect(after.generation).toBe(2);

      // Another session of the same identity is untouched.
      expect((await context(t.app, bystander.accessToken)).statusCode).toBe(200);
      expect((await renew(t.app, bystander.refreshToken)).statusCode).toBe(201);
    }
  });
});
