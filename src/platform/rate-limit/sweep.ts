import type { FastifyInstance } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import { installPrune } from '../db/prune.js';
import { type BudgetPolicy, sweepBudgets, sweepSendWindows } from './repository.js';

/** Rows deleted per statement: short statements, so a large backlog never holds locks for long. */
const BATCH = 1000;
/** Statements per table per sweep: a bounded amount of work even after a flood. */
const MAX_BATCHES = 50;
/** How often each instance sweeps; every instance may, the deletes only ever touch dead rows. */
export const SWEEP_SECONDS = 600;

export interface SweepPolicy {
  guesses: BudgetPolicy;
  /** The send windows' length (RATE_LIMIT_SENDS_A_MESSAGE). */
  sendWindowSeconds: number;
}

/**
 * Deletes what can no longer change an answer: guess budgets whose count has aged out and send
 * windows that have ended. Without it both tables grow with every address ever guessed at or sent
 * to (docs/operations.md "Tables that age").
 */
export async function sweepRateLimits(
  db: Db,
  clock: Clock,
  policy: SweepPolicy,
): Promise<{ budgets: number; sendWindows: number }> {
  const now = clock.now();
  let budgets = 0;
  let sendWindows = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await sweepBudgets(db, now, policy.guesses, BATCH);
    budgets += n;
    if (n < BATCH) break;
  }
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await sweepSendWindows(db, now, policy.sendWindowSeconds, BATCH);
    sendWindows += n;
    if (n < BATCH) break;
  }
  return { budgets, sendWindows };
}

/** Sweeps once when the app is ready, then every SWEEP_SECONDS while it runs. */
export function installRateLimitSweep(app: FastifyInstance, db: Db, clock: Clock, policy: SweepPolicy): void {
  installPrune(app, {
    everySeconds: SWEEP_SECONDS,
    atStart: true,
    run: () => sweepRateLimits(db, clock, policy),
    failed: (err) => app.log.warn({ errClass: (err as Error)?.name }, 'rate-limit sweep failed'),
  });
}
