import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Problem } from '../../src/platform/http/problem.js';
import { guessSubject } from '../../src/platform/rate-limit/guess-budget.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

// docs/security.md states the bound the default RATE_LIMIT_GUESSES keeps; this walks a year of
// the real budget (the database's own arithmetic), an attacker trying the moment each wait ends.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_GUESSES: '' } });
});
afterAll(async () => {
  await t.close();
});

const YEAR_SECONDS = 365 * 24 * 3600;
// A 6-digit TOTP code is accepted in the current step and one either side: 3 codes in 10^6.
const P_PER_GUESS = 3 / 1_000_000;

describe('the default guess budget over a year', () => {
  it('admits so few guesses that an authenticator code falls with under 1% chance, both budgets together', async () => {
    const subject = guessSubject.session('00000000-0000-4000-8000-00000000b0d0');
    const end = t.clock.now().getTime() + YEAR_SECONDS * 1000;
    let admitted = 0;
    while (t.clock.now().getTime() < end) {
      try {
        await t.ctx.guesses.admit(subject);
        admitted++;
      } catch (err) {
        const wait = Number((err as Problem).extra.headers?.['retry-after']);
        expect(wait).toBeGreaterThan(0);
        t.clock.advance(wait);
      }
    }
    // A thief holding both a session and the password has two budgets (step-up and second step).
    const chance = 2 * admitted * P_PER_GUESS;
    console.info(
      `[bound] ${admitted} guesses a year per budget; chance with two budgets ${(chance * 100).toFixed(2)}%`,
    );
    expect(admitted).toBeGreaterThan(1000);
    expect(chance).toBeLessThan(0.01);
  }, 120_000);
});
