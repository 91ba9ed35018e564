import { type ExpressionBuilder, type RawBuilder, sql } from 'kysely';
import type { Executor } from '../db/database.js';
import type { DB } from '../db/schema.js';

export interface BudgetPolicy {
  /** Attempts admitted before the first wait. */
  free: number;
  /** The longest wait between two attempts, in seconds. */
  maxDelaySeconds: number;
}

/**
 * How long a budget must go untouched before its count is forgotten: thirty longest waits (10 days
 * at the default 12 hours). Long enough that pausing never pays an attacker: a pause of this length
 * costs more attempts at one per longest wait (30) than the fresh allowance and the short waits
 * after it give back (10 free and about 15 doublings), so a year admits no more guesses than trying
 * without pause does (docs/security.md "The guessing bound").
 */
export function ageOutSeconds(policy: BudgetPolicy): number {
  return 30 * policy.maxDelaySeconds;
}

/**
 * Admits one attempt for `key` unless its wait has not run out, in one statement: the row lock of
 * the upsert orders concurrent attempts, so of any number racing, no more are admitted than the
 * budget allows. The admitted attempt is counted at once (as a failure until forgiven); from the
 * `free`-th one on, the next attempt must wait 1, 2, 4 ... seconds, at most `maxDelaySeconds`. A
 * count untouched for ageOutSeconds is forgotten: the attempt starts it afresh.
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
  const aged = sql`b.updated_at <= ${now}::timestamptz - make_interval(secs => ${ageOutSeconds(policy)}::int)`;
  const attempts = sql`CASE WHEN ${aged} THEN 1 ELSE b.attempts + 1 END`;
  // raw: one upsert whose wait is computed from the row it finds (CASE, make_interval, power); the
  // admission, the count and the next wait must be one statement under the row lock.
  const admitted = await sql<{ attempts: number }>`
    INSERT INTO guess_budgets AS b (key, attempts, next_attempt_at, updated_at)
    VALUES (${key}, 1, ${waitAfter(sql`1`)}, ${now})
    ON CONFLICT (key) DO UPDATE SET
      attempts = ${attempts},
      next_attempt_at = ${waitAfter(attempts)},
      updated_at = ${now}
    WHERE b.next_attempt_at IS NULL OR b.next_attempt_at <= ${now}
    RETURNING attempts`.execute(db);
  if (admitted.rows.length === 1) return null;
  const held = await db
    .selectFrom('guess_budgets')
    .select('next_attempt_at as nextAttemptAt')
    .where('key', '=', key)
    .executeTakeFirst();
  return held?.nextAttemptAt ?? now;
}

/** Read only: whether `key` holds a count, and until when its next attempt must wait (null: now). */
export async function budgetState(
  db: Executor,
  key: string,
  now: Date,
): Promise<{ counted: boolean; waitUntil: Date | null }> {
  const row = await db
    .selectFrom('guess_budgets')
    .select('next_attempt_at as nextAttemptAt')
    .where('key', '=', key)
    .executeTakeFirst();
  if (!row) return { counted: false, waitUntil: null };
  return budgetStateOf(
    { counted: true, nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt) },
    now,
  );
}

/** A budget's row as read (`counted`: a row exists) against now: when its next attempt may come. */
export function budgetStateOf(
  row: { counted: boolean; nextAttemptAt: Date | null },
  now: Date,
): { counted: boolean; waitUntil: Date | null } {
  if (!row.counted) return { counted: false, waitUntil: null };
  const at = row.nextAttemptAt;
  return { counted: true, waitUntil: at && at > now ? at : null };
}

/** A success: the subject's next attempts are free again. */
export async function forgiveAttempts(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('guess_budgets').where('key', '=', key).execute();
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
  // A window that started at or before the cutoff has ended: this message starts a new one.
  const cutoff = new Date(now.getTime() - windowSeconds * 1000);
  const row = await db
    .insertInto('send_windows')
    .values({ key, window_started_at: now, sent: 1 })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet((eb) => {
        const ended = eb('send_windows.window_started_at', '<=', cutoff);
        return {
          window_started_at: eb
            .case()
            .when(ended)
            .then(now)
            .else(eb.ref('send_windows.window_started_at'))
            .end(),
          sent: eb
            .case()
            .when(ended)
            .then(1)
            .else(eb('send_windows.sent', '+', 1))
            .end(),
        };
      }),
    )
    .returning(['sent', 'window_started_at as windowStartedAt'])
    .executeTakeFirstOrThrow();
  return {
    sent: row.sent,
    windowEndsAt: new Date(new Date(row.windowStartedAt).getTime() + windowSeconds * 1000),
  };
}

/**
 * Deletes budgets whose count has aged out and whose wait is over (indistinguishable from no row,
 * so deleting them changes no answer), at most `batch` rows; returns how many went.
 */
export async function sweepBudgets(
  db: Executor,
  now: Date,
  policy: BudgetPolicy,
  batch: number,
): Promise<number> {
  const cutoff = new Date(now.getTime() - ageOutSeconds(policy) * 1000);
  const dead = (eb: ExpressionBuilder<DB, 'guess_budgets'>) =>
    eb.and([
      eb('updated_at', '<=', cutoff),
      eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)]),
    ]);
  // The conditions stand on the DELETE too, not only in the batch's SELECT: a row an admission
  // updated meanwhile is re-checked against them once its lock is free, and kept.
  const r = await db
    .deleteFrom('guess_budgets')
    .where(dead)
    .where('key', 'in', db.selectFrom('guess_budgets').select('key').where(dead).limit(batch))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Deletes send windows that have ended (countSend starts an ended window afresh, so no answer
 * changes), at most `batch` rows; returns how many went.
 */
export async function sweepSendWindows(
  db: Executor,
  now: Date,
  windowSeconds: number,
  batch: number,
): Promise<number> {
  const cutoff = new Date(now.getTime() - windowSeconds * 1000);
  // As above: a window restarted meanwhile is re-checked after its lock, and kept.
  const r = await db
    .deleteFrom('send_windows')
    .where('window_started_at', '<=', cutoff)
    .where(
      'key',
      'in',
      db.selectFrom('send_windows').select('key').where('window_started_at', '<=', cutoff).limit(batch),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
