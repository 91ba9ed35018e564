import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { lastOutboxCode, post } from '../second-factors/helpers.js';
import { expectRefusals, identifierStepUp, ROUNDS, raceApp, scalar, statuses, times } from './support.js';

// Step-up challenges share the one challenge state machine (migration 0007): of several
// confirmations of one challenge with its correct code, exactly one mints an elevation.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

describe('step-up confirmations of one challenge', () => {
  it(`10 at once with the correct code: one elevation, the challenge spent once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, token, challengeId } = await identifierStepUp(t);
      const code = lastOutboxCode(t.config.dataDir, person.email);

      const answers = await race(10, () =>
        post(t.app, '/step-ups/confirmations', { token, payload: { challengeId, code } }),
      );

      expect(statuses(answers), `round ${round}`).toEqual([201, ...times(9, 403)]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 403),
        403,
        'identity.step_up_confirmation_refused',
      );
      const row = await sql<{ spent: boolean; attempts: number }>`
        SELECT spent_at IS NOT NULL AS spent, attempts FROM challenges WHERE id = ${challengeId}`.execute(
        t.ctx.database.db,
      );
      // The losers found the challenge spent: nothing was guessed, so nothing was charged.
      expect(row.rows).toEqual([{ spent: true, attempts: 0 }]);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM elevations WHERE identity_id = ${person.identityId}`,
        ),
      ).toBe(1);
      expect(
        await scalar(t, sql`SELECT failed_attempts AS n FROM identities WHERE id = ${person.identityId}`),
      ).toBe(0);
    }
  });
});
