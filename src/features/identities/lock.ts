import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import { clearLockCounter, lockCounter, setLockCounter } from './repository.js';

/** Interface section 3 / 8: failures counted per identity across every code-answering route. */
export const LOCK_THRESHOLD = 5;

export interface FailureOutcome {
  /** The account was already locked before this failure (a "locked elsewhere" refusal). */
  wasLocked: boolean;
  /** This failure tripped the lock. */
  tripped: boolean;
  /** Locked after this failure (wasLocked or tripped). */
  locked: boolean;
}

/**
 * The identity-wide lock. It only stops guessing: callers check a correct secret first and never
 * ask the lock before admitting it. Every method runs in the caller's transaction.
 */
export class AccountLock {
  constructor(
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly lockSeconds: number,
  ) {}

  /**
   * Counts one failed guess. The identity row is locked FOR UPDATE, so concurrent failures count
   * one by one and exactly one transaction sees the counter cross the threshold and writes the
   * audit record (PostgreSQL 15 has no OLD in RETURNING, hence the read-then-write under lock).
   */
  async recordFailure(trx: Executor, identityId: string, route: string): Promise<FailureOutcome> {
    const now = this.clock.now();
    const current = await lockCounter(trx, identityId);
    if (!current) return { wasLocked: false, tripped: false, locked: false };
    const lockedUntil = current.locked_until ? new Date(current.locked_until) : null;
    const wasLocked = lockedUntil !== null && lockedUntil > now;
    if (wasLocked) {
      await setLockCounter(trx, identityId, 'increment');
      return { wasLocked: true, tripped: false, locked: true };
    }
    // A lock that ran out starts the count again.
    const failures = (lockedUntil ? 0 : current.failed_attempts) + 1;
    const tripped = failures >= LOCK_THRESHOLD;
    const until = tripped ? new Date(now.getTime() + this.lockSeconds * 1000) : null;
    await setLockCounter(trx, identityId, { failures, lockedUntil: until });
    if (tripped) {
      await this.audit.appendOwn(trx, 'identity.account.locked', identityId, {
        route,
        lockedUntil: until!.toISOString(),
      });
    }
    return { wasLocked: false, tripped, locked: tripped };
  }

  /** Only where the interface says: a correct second-factor sign-in or sign-in-method confirmation. */
  async clear(trx: Executor, identityId: string): Promise<void> {
    await clearLockCounter(trx, identityId);
  }
}
