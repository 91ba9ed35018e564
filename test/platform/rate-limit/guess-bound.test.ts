import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Problem } from '../../../src/platform/problem.js';
import { guessSubject } from '../../../src/platform/rate-limit/guess-budget.js';
import { ageOutSeconds } from '../../../src/platform/rate-limit/repository.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';

// docs/security.md states the bound the default RATE_LIMIT_GUESSES keeps; this walks a year of
// the real budget (the database's own arithmetic) for an attacker who tries the moment each wait
// ends, and for one who pauses until the count ages out and starts again.
let t: TestApp;
beforeAll(async () => {
  // The defaults of RATE_LIMIT_GUESSES, RATE_LIMIT_SENDS_A_MESSAGE and CHALLENGE_TTL.
  t = await createTestApp({ env: { RATE_LIMIT_GUESSES: '', RATE_LIMIT_SENDS_A_MESSAGE: '' } });
});
afterAll(async () => {
  await t.close();
});

const YEAR_SECONDS = 365 * 24 * 3600;
// A 6-digit TOTP code is accepted in the current step and one either side: 3 codes in 10^6.
const TOTP_P_PER_GUESS = 3 / 1_000_000;

/**
 * Admitted guesses in a year on one subject. With `pauseAfter`, once that many attempts past the
 * free ones are counted the attacker goes quiet until the count ages out, then starts again.
 */
async function walkYear(subject: string, pauseAfter?: number): Promise<number> {
  const { free } = t.config.rateLimits.guesses;
  const end = t.clock.now().getTime() + YEAR_SECONDS * 1000;
  let admitted = 0;
  let run = 0;
  while (t.clock.now().getTime() < end) {
    if (pauseAfter !== undefined && run >= free + pauseAfter) {
      t.clock.advance(ageOutSeconds(t.config.rateLimits.guesses));
      run = 0;
    }
    try {
      await t.ctx.guesses.admit(subject);
      admitted++;
      run++;
    } catch (err) {
      const wait = Number((err as Problem).extra.headers?.['retry-after']);
      expect(wait).toBeGreaterThan(0);
      t.clock.advance(wait);
    }
  }
  return admitted;
}

describe('the default guess budget over a year', () => {
  let steady = 0;

  it('admits so few guesses that an authenticator code falls with under 1% chance, both budgets together', async () => {
    steady = await walkYear(guessSubject.session('00000000-0000-4000-8000-00000000b0d0'));
    // A thief holding both a session and the password has two budgets (step-up and second step).
    const chance = 2 * steady * TOTP_P_PER_GUESS;
    console.info(
      `[bound] ${steady} guesses a year per budget; TOTP with two budgets ${(chance * 100).toFixed(2)}%`,
    );
    expect(steady).toBeGreaterThan(700);
    expect(chance).toBeLessThan(0.01);
  }, 120_000);

  it('gives an attacker who pauses until the count ages out no more guesses than trying steadily', async () => {
    expect(steady).toBeGreaterThan(0);
    // Short pauses after the free ones, and after the waits have reached hours.
    for (const pauseAfter of [0, 8, 16, 24]) {
      const paused = await walkYear(
        guessSubject.session(`00000000-0000-4000-8000-0000000${1000 + pauseAfter}`),
        pauseAfter,
      );
      console.info(`[bound] pausing after ${pauseAfter} extra: ${paused} guesses a year`);
      expect(paused).toBeLessThanOrEqual(steady);
    }
  }, 300_000);

  it('keeps a 6-digit sent code under 1% a year with every code a destination may hold live at once', () => {
    expect(steady).toBeGreaterThan(0);
    const { max, windowSeconds } = t.config.rateLimits.sendsAMessage;
    // Codes sent to one destination within one code's life: whole windows it spans, plus the one
    // it started in (fixed windows: five at the end of one and five at the start of the next).
    const live = max * (Math.ceil(t.config.lifetimes.challenge / windowSeconds) + 1);
    expect(t.config.verificationCodeLength).toBe(6);
    const chance = (steady * live) / 1_000_000;
    console.info(`[bound] ${live} codes live at once; a sent code ${(chance * 100).toFixed(2)}% a year`);
    expect(chance).toBeLessThan(0.01);
  });
});
