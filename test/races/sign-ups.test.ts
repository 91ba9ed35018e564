import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import {
  challengesOf,
  confirm,
  emailForm,
  identifierRow,
  outbox,
  PASSWORD,
  signUp,
  uniqueEmail,
} from '../registration/helpers.js';
import { ROUNDS, raceApp, scalar, statuses, times } from './support.js';

// Interface 4.2 (the race that precedes race 3): concurrent registrations for one address.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

const SIGN_UPS = 10;

describe('concurrent sign-ups for one new address', () => {
  it(`10 at once: all 201 alike, one identity, one identifier, ten live codes (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    const identitiesBefore = await scalar(t, sql`SELECT count(*)::int AS n FROM identities`);
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`race-up-${round}`);

      const answers = await race(SIGN_UPS, () =>
        signUp(t.app, { ...emailForm(address), password: PASSWORD }),
      );

      expect(statuses(answers), `round ${round}`).toEqual(times(SIGN_UPS, 201));
      // The clock does not move: the winner and the losers answer the same bytes.
      expect(new Set(answers.map((r) => r.body)).size).toBe(1);
      const rows = await identifierRow(db, address);
      expect(rows).toHaveLength(1);
      expect(rows[0].verified_at).toBeNull();
      const challenges = await challengesOf(db, address);
      expect(challenges).toHaveLength(SIGN_UPS);
      expect(challenges.every((c) => c.spent_at === null && c.revoked_at === null && c.attempts === 0)).toBe(
        true,
      );
      expect(
        await scalar(
          t,
          sql`SELECT count(DISTINCT identity_id)::int AS n FROM challenges WHERE identifier_id = ${rows[0].id}`,
        ),
      ).toBe(1);
      // Every code went out, and any one of them confirms the one identity.
      const sent = outbox(t.config.dataDir).filter((m) => m.to === address);
      expect(sent).toHaveLength(SIGN_UPS);
      const code = sent[round % SIGN_UPS].text.split(/\s+/).find((w) => /^[0-9]{6}$/.test(w))!;
      const ok = await confirm(t.app, { ...emailForm(address), password: PASSWORD, code });
      expect(ok.statusCode, ok.body).toBe(204);
    }
    // Every losing claim removed the identity it had created: one identity per address, no orphan.
    expect(await scalar(t, sql`SELECT count(*)::int AS n FROM identities`)).toBe(identitiesBefore + ROUNDS);
  });
});
