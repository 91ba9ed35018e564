import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/platform/clock.js';
import type { Problem } from '../../../src/platform/problem.js';
import { ageOutSeconds } from '../../../src/platform/rate-limit/repository.js';
import { sweepRateLimits } from '../../../src/platform/rate-limit/sweep.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';

// guess_budgets and send_windows gain a row for every subject ever guessed at or sent to; the
// sweep deletes those that can no longer change an answer, so both tables stay bounded.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_GUESSES: '', RATE_LIMIT_SENDS_A_MESSAGE: '' } });
});
afterAll(async () => {
  await t.close();
});

const SUBJECTS = 1200;

async function rows(): Promise<{ budgets: number; sendWindows: number }> {
  const { db } = t.ctx.database;
  const b = await db
    .selectFrom('guess_budgets')
    .select(({ fn }) => fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  const w = await db
    .selectFrom('send_windows')
    .select(({ fn }) => fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return { budgets: Number(b.n), sendWindows: Number(w.n) };
}

/** One failed guess and one message for each of `n` subjects named after `tag`. */
async function fill(tag: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await t.ctx.guesses.admit(`code:sweep:${tag}-${i}`);
    await t.ctx.messages.count([{ key: `sweep:${tag}-${i}`, refusal: 'messages' }]);
  }
}

function sweep() {
  return sweepRateLimits(t.ctx.database.db, t.clock, {
    guesses: t.config.rateLimits.guesses,
    sendWindowSeconds: t.config.rateLimits.sendsAMessage.windowSeconds,
  });
}

describe('the rate-limit sweep', () => {
  it('deletes aged budgets and ended send windows in batches, and keeps the live ones', async () => {
    await sweep();
    const base = await rows();
    await fill('old', SUBJECTS);
    expect(await rows()).toEqual({
      budgets: base.budgets + SUBJECTS,
      sendWindows: base.sendWindows + SUBJECTS,
    });

    // Nothing has aged yet: the sweep deletes nothing.
    t.clock.advance(60);
    expect(await sweep()).toEqual({ budgets: 0, sendWindows: 0 });

    // Past the send window, the windows have ended; the budgets have not aged out.
    t.clock.advance(t.config.rateLimits.sendsAMessage.windowSeconds);
    await fill('new', 10);
    expect(await sweep()).toEqual({ budgets: 0, sendWindows: SUBJECTS });

    // Past the age-out, the old budgets go (more than one batch of them); the new ones are younger.
    t.clock.advance(ageOutSeconds(t.config.rateLimits.guesses) - 120);
    expect(await sweep()).toEqual({ budgets: SUBJECTS, sendWindows: 10 });
    expect(await rows()).toEqual({ budgets: 10, sendWindows: 0 });
    t.clock.advance(t.config.rateLimits.sendsAMessage.windowSeconds);
    await sweep();
    expect(await rows()).toEqual({ budgets: 0, sendWindows: 0 });
  });

  it('changes no answer: a swept subject starts with its free attempts, as an aged one would', async () => {
    const subject = 'code:sweep:answer';
    const { free } = t.config.rateLimits.guesses;
    for (let i = 0; i < free; i++) await t.ctx.guesses.admit(subject);
    await expect(t.ctx.guesses.admit(subject)).rejects.toMatchObject({ code: 'rate_limit.exceeded' });
    // A budget still waiting is never swept, however old its first attempt.
    t.clock.advance(1);
    await t.ctx.guesses.admit(subject);
    t.clock.advance(ageOutSeconds(t.config.rateLimits.guesses));
    await sweep();
    for (let i = 0; i < free; i++) await t.ctx.guesses.admit(subject);
    const early = await t.ctx.guesses.admit(subject).catch((err: Problem) => err);
    expect((early as Problem).extra.headers?.['retry-after']).toBe('1');
  });

  it('runs when an instance starts, so a restarted deployment is bounded too', async () => {
    await fill('restart', 5);
    const later = new ManualClock(t.clock.now());
    later.advance(ageOutSeconds(t.config.rateLimits.guesses) + 1);
    const second = await createTestApp({
      db: t.db,
      clock: later,
      env: {
        RATE_LIMIT_GUESSES: '',
        RATE_LIMIT_SENDS_A_MESSAGE: '',
        // The same deployment: one SECRETS_KEY (it seals the signing key kept in the database).
        SECRETS_KEY: t.config.secretsKey.toString('base64'),
      },
    });
    try {
      expect(await rows()).toEqual({ budgets: 0, sendWindows: 0 });
    } finally {
      await second.close();
    }
  });
});
