import { randomInt } from 'node:crypto';
import { expect } from 'vitest';
import type { AppContext } from '../../src/context.js';
import type { TestApp } from './app.js';

/**
 * Answer-time comparison for the equal-time tests (issue 11 item 6): two kinds of call, made one
 * after the other in alternating order so neither always follows the other, after a warm-up (JIT,
 * statement plans, the dummy hash). Medians, not means: one garbage collection is not a leak.
 */

/** Contract of the equal-time tests: medians within this many milliseconds. */
const MAX_MEDIAN_DIFFERENCE_MS = 2;

export interface TimedPair {
  /** Milliseconds of each call of the first kind. */
  first: number[];
  second: number[];
  firstMedian: number;
  secondMedian: number;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function timed(call: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await call();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

export async function interleaved(
  first: () => Promise<void>,
  second: () => Promise<void>,
  options: {
    calls: number;
    warmUp: number;
    /**
     * Untimed preparation before every call of either kind (a fresh challenge to miss): done
     * before both, so whatever it leaves in caches weighs on both alike.
     */
    prepare?: () => Promise<void>;
  },
): Promise<TimedPair> {
  const a: number[] = [];
  const b: number[] = [];
  const runFirst = async (into?: number[]) => {
    await options.prepare?.();
    const ms = await timed(first);
    into?.push(ms);
  };
  const runSecond = async (into?: number[]) => {
    await options.prepare?.();
    const ms = await timed(second);
    into?.push(ms);
  };
  for (let i = 0; i < options.warmUp; i++) {
    await runFirst();
    await runSecond();
  }
  for (let i = 0; i < options.calls; i++) {
    if (i % 2 === 0) {
      await runFirst(a);
      await runSecond(b);
    } else {
      await runSecond(b);
      await runFirst(a);
    }
  }
  return { first: a, second: b, firstMedian: median(a), secondMedian: median(b) };
}

/** A six-digit code none of the live ones can be: the refusal is certain, not merely likely. */
export function wrongCode(issued: Set<string>): string {
  for (;;) {
    const code = String(randomInt(1_000_000)).padStart(6, '0');
    if (!issued.has(code)) return code;
  }
}

/**
 * Whether a code of `purpose` is live (could still be answered) now: the equal-time tests keep
 * exactly one in flight, as an address has while its owner waits for a message.
 */
export async function oneIsLive(
  ctx: AppContext,
  purpose: 'sign_up' | 'password_recovery' | 'sign_in',
): Promise<boolean> {
  const row = await ctx.database.db
    .selectFrom('challenges')
    .select((eb) => eb.fn.countAll<number>().as('live'))
    .where('purpose', '=', purpose)
    .where('spent_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', ctx.clock.now())
    .whereRef('attempts', '<', 'max_attempts')
    .executeTakeFirstOrThrow();
  return Number(row.live) > 0;
}

/**
 * Logs both medians under `[timing]` and asserts they are within MAX_MEDIAN_DIFFERENCE_MS. With
 * `atLeastMs`, both must also exceed it: the comparison means something only if each refusal really
 * paid for its Argon2id verify.
 */
export function expectEqualTime(
  t: TestApp,
  r: TimedPair,
  names: [first: string, second: string],
  atLeastMs?: number,
): void {
  const backend = t.db.url ? 'PostgreSQL' : 'PGlite';
  const report = `${backend}: ${names[0]} median ${r.firstMedian.toFixed(2)} ms, ${names[1]} median ${r.secondMedian.toFixed(2)} ms`;
  console.info(`[timing] ${report}`);
  if (atLeastMs !== undefined)
    expect(Math.min(r.firstMedian, r.secondMedian), report).toBeGreaterThan(atLeastMs);
  expect(Math.abs(r.firstMedian - r.secondMedian), report).toBeLessThan(MAX_MEDIAN_DIFFERENCE_MS);
}

/** Attempts charged on every code of `purpose`: proof that the misses really were counted. */
export async function attemptsCharged(
  ctx: AppContext,
  purpose: 'sign_up' | 'password_recovery' | 'sign_in',
): Promise<number> {
  const row = await ctx.database.db
    .selectFrom('challenges')
    .select((eb) => eb.fn.sum<number>('attempts').as('attempts'))
    .where('purpose', '=', purpose)
    .executeTakeFirstOrThrow();
  return Number(row.attempts);
}
