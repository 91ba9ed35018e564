import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { post } from '../second-factors/helpers.js';
import { expectRefusals, identifierStepUp, ROUNDS, raceApp } from './support.js';

// The guess budget's admission is one upsert whose row lock orders concurrent attempts: however
// many wrong guesses arrive at once, no more than the free allowance are looked at.
let t: TestApp;

beforeAll(async () => {
  // The default budget (10 free failures); everything else as in every race.
  t = await raceApp({ RATE_LIMIT_GUESSES: '' });
});
afterAll(async () => {
  await t?.close();
});

describe('per-identity guess budget', () => {
  it(`20 wrong step-up codes at once on one identity: exactly 10 are checked, 10 answer 429 (${ROUNDS} rounds)`, async () => {
    expect(t.config.rateLimits.guesses.free).toBe(10);
    for (let round = 0; round < ROUNDS; round++) {
      const { token, challengeId } = await identifierStepUp(t);

      const answers = await race(20, () =>
        post(t.app, '/step-ups/confirmations', { token, payload: { challengeId, code: '000000' } }),
      );

      const early = answers.filter((r) => r.statusCode === 429);
      const checked = answers.filter((r) => r.statusCode !== 429);
      expect({ round, checked: checked.length, early: early.length }).toEqual({
        round,
        checked: 10,
        early: 10,
      });
      for (const r of checked) expect([403, 423], r.body).toContain(r.statusCode);
      expectRefusals(early, 429, 'rate_limit.exceeded');
    }
  });
});
