import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { hmacHex } from '../../src/platform/crypto/tokens.js';
import { ageOutSeconds } from '../../src/platform/rate-limit/repository.js';
import { sweepRateLimits } from '../../src/platform/rate-limit/sweep.js';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// The sweep deletes budgets whose count has aged out. An admission on such a budget restarts its
// count in the same moment: the sweep must not delete the row the admission just wrote (the
// attempt would be forgotten, a free guess). Each round ages SUBJECTS budgets, then admits on all
// of them while the sweep runs.
let t: TestApp;
beforeAll(async () => {
  t = await raceApp({ RATE_LIMIT_GUESSES: '' });
});
afterAll(async () => {
  await t?.close();
});

const SUBJECTS = 60;

describe('the sweep racing admissions on aged budgets', () => {
  it(`never deletes a budget an admission has just restarted (${ROUNDS} rounds)`, async () => {
    const policy = t.config.rateLimits.guesses;
    const sweep = () =>
      sweepRateLimits(t.ctx.database.db, t.clock, {
        guesses: policy,
        sendWindowSeconds: t.config.rateLimits.sendsAMessage.windowSeconds,
      });
    let sweptSome = 0;
    let keptSome = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const subjects = Array.from({ length: SUBJECTS }, (_, i) => `code:sweep-race:${round}-${i}`);
      for (const s of subjects) for (let i = 0; i < policy.free; i++) await t.ctx.guesses.admit(s);
      t.clock.advance(ageOutSeconds(policy) + 1);

      const results = await race(SUBJECTS + 1, (i) =>
        i === SUBJECTS ? sweep() : t.ctx.guesses.admit(subjects[i]).then(() => undefined),
      );
      const swept = results[SUBJECTS] as { budgets: number };

      // Every admission was counted: its budget holds exactly the one attempt it restarted with.
      const key = (s: string) => hmacHex(deriveKey(t.config.secretsKey, 'guess-budgets'), s);
      const kept = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM guess_budgets
            WHERE key IN (${sql.join(subjects.map(key))}) AND attempts = 1`,
      );
      expect(kept, `round ${round}: swept ${swept.budgets}`).toBe(SUBJECTS);
      if (swept.budgets > 0) sweptSome++;
      if (swept.budgets < SUBJECTS) keptSome++;
    }
    // The rounds interleaved: some sweeps found aged rows to delete before the admissions reached
    // them, and some found rows the admissions had already restarted.
    expect(sweptSome).toBeGreaterThan(0);
    expect(keptSome).toBeGreaterThan(0);
  });
});
