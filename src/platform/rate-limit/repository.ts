import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../db/database.js';

export interface BudgetPolicy {
  /** Attempts admitted before the first wait. */
  free: number;
  /** The longest wait between two attempts, in seconds. */
  maxDelaySeconds: number;
}

/**
 * Admits one attempt for `key` unless its wait has not run out, in one statement: the row lock of
 * the upsert orders concurrent attempts, so of any number racing, no more are admitted than the
 * budget allows. The admitted attempt is counted at once (as a failure until forgiven); from the
 * `free`-th one on, the next attempt must wait 1, 2, 4 ... seconds, at most `maxDelaySeconds`.
 * Returns null when admitted, else the instant the next attempt may be made.
 */
export async function admitAttempt(
  db: Executor,
  key: string,
  now: Date,
  policy: BudgetPolicy,
): Promise<Date | null> {
  const { free, maxDelaySeconds } = policy;
  const waitAfter = (attempts: RawBuilder<unknown>) => sql`CASE WHEN ${attempts} >= ${free}::int
      THEN ${now}::timestamptz + make_interval(
        secs => least(${maxDelaySeconds}::int, power(2, least(${attempts} - ${free}::int, 30))))
      ELSE NULL END`;
  const admitted = await sql<{ attempts: number }>`
    INSERT INTO guess_budgets AS b (key, attempts, next_attempt_at, updated_at)
    VALUES (${key}, 1, ${waitAfter(sql`1`)}, ${now})
    ON CONFLICT (key) DO UPDATE SET
      attempts = b.attempts + 1,
      next_attempt_at = ${waitAfter(sql`(b.attempts + 1)`)},
      updated_at = ${now}
    WHERE b.next_attempt_at IS NULL OR b.next_attempt_at <= ${now}
    RETURNING attempts`.execute(db);
  if (admitted.rows.length === 1) return null;
  const held = await sql<{ next_attempt_at: Date }>`
    SELECT next_attempt_at FROM guess_budgets WHERE key = ${key}`.execute(db);
  return held.rows[0]?.next_attempt_at ?? now;
}

/** A success: the subject's next attempts are free again. */
export async function forgiveAttempts(db: Executor, key: string): Promise<void> {
  await sql`DELETE FROM guess_budgets WHERE key = ${key}`.execute(db);
}

/**
 * Counts one message for `key` in its fixed window (a window older than `windowSeconds` starts
 * afresh), in one statement. Returns the count in the window, this one included, and when the
 * window ends.
 */
export async function countSend(
  db: Executor,
  key: string,
  now: Date,
  windowSeconds: number,
): Promise<{ sent: number; windowEndsAt: Date }> {
  const expired = sql`w.window_started_at <= ${now}::timestamptz - make_interval(secs => ${windowSeconds}::int)`;
  const r = await sql<{ sent: number; window_started_at: Date }>`
    INSERT INTO send_windows AS w (key, window_started_at, sent) VALUES (${key}, ${now}, 1)
    ON CONFLICT (key) DO UPDATE SET
      window_started_at = CASE WHEN ${expired} THEN ${now} ELSE w.window_started_at END,
      sent = CASE WHEN ${expired} THEN 1 ELSE w.sent + 1 END
    RETURNING sent, window_started_at`.execute(db);
  const row = r.rows[0];
  return {
    sent: row.sent,
    windowEndsAt: new Date(new Date(row.window_started_at).getTime() + windowSeconds * 1000),
  };
}
