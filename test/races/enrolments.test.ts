import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { race } from '../helpers/identities.js';
import { DEFAULT_POLICY, type Factor, get, post, totp } from '../second-factors/helpers.js';
import { expectRefusals, ROUNDS, raceApp, statuses, times } from './support.js';

// Race 5 (interface 3, 4.6): concurrent second-factor enrolments of one identity.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

const ENROLMENTS = 10;

describe('concurrent second-factor enrolments', () => {
  it(`10 at once: all 201, exactly one live pending row, and only its secret confirms (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, elevation } = await elevatedPerson(t);
      const call = { token: grant.accessToken, elevation, payload: {} };
      // A pending enrolment from before the race: it must be revoked too.
      const earlier = await post(t.app, '/second-factors', call);
      expect(earlier.statusCode, earlier.body).toBe(201);
      const earlierId = (earlier.json().data as Factor).id;

      const answers = await race(ENROLMENTS, () => post(t.app, '/second-factors', call));

      expect(statuses(answers), `round ${round}`).toEqual(times(ENROLMENTS, 201));
      const factors = answers.map((r) => r.json().data as Factor);
      expect(new Set(factors.map((f) => f.id)).size).toBe(ENROLMENTS);
      expect(new Set(factors.map((f) => f.secret)).size).toBe(ENROLMENTS);

      const rows = (
        await sql<{ id: string; verified: boolean; revoked: boolean }>`
          SELECT id, verified_at IS NOT NULL AS verified, revoked_at IS NOT NULL AS revoked
          FROM second_factors WHERE identity_id = ${person.identityId}`.execute(db)
      ).rows;
      expect(rows).toHaveLength(ENROLMENTS + 1);
      const pending = rows.filter((r) => !r.verified && !r.revoked);
      expect(pending).toHaveLength(1);
      expect(rows.filter((r) => r.verified)).toHaveLength(0);
      expect(rows.find((r) => r.id === earlierId)?.revoked).toBe(true);
      const winner = factors.find((f) => f.id === pending[0].id)!;
      expect(winner).toBeDefined();

      // A loser's secret is refused (one counted failure); the winner's confirms.
      const loser = factors.find((f) => f.id !== winner.id)!;
      const stale = await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: totp(loser.secret, DEFAULT_POLICY, t.clock.now()) },
      });
      expectRefusals([stale], 403, 'identity.second_factor_confirmation_refused');
      const ok = await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: totp(winner.secret, DEFAULT_POLICY, t.clock.now()) },
      });
      expect(ok.statusCode, ok.body).toBe(204);
      const listed = (await get(t.app, '/second-factors', grant.accessToken)).json().data as { id: string }[];
      expect(listed.map((f) => f.id)).toEqual([winner.id]);
      t.clock.advance(DEFAULT_POLICY.period);
    }
  });
});
