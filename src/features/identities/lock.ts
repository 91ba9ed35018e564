import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { Signals } from '../../platform/metrics/signals.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from './events.js';
import { clearLockCounter, countLockFailure, NOBODY } from './repository.js';

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
    private readonly signals: Signals,
    private readonly events: EventLog,
  ) {}

  /**
   * Counts one failed guess, in one statement (countLockFailure): concurrent failures count one by
   * one and exactly one transaction sees the counter cross the threshold and writes the audit
   * record. `undefined` counts on nobody with the same statement, so a refusal for an address no
   * account holds costs what one for an account costs; it answers undefined.
   */
  async recordFailure(trx: Executor, identityId: string, route: string): Promise<FailureOutcome>;
  async recordFailure(
    trx: Executor,
    identityId: string | undefined,
    route: string,
  ): Promise<FailureOutcome | undefined>;
  async recordFailure(
    trx: Executor,
    identityId: string | undefined,
    route: string,
  ): Promise<FailureOutcome | undefined> {
    const now = this.clock.now();
    const until = new Date(now.getTime() + this.lockSeconds * 1000);
    const counted = await countLockFailure(trx, identityId ?? NOBODY, now, LOCK_THRESHOLD, until);
    if (!identityId) return undefined;
    if (!counted) return { wasLocked: false, tripped: false, locked: false };
    if (counted.wasLocked) return { wasLocked: true, tripped: false, locked: true };
    const tripped = counted.lockedUntil !== null;
    if (tripped) {
      this.signals.lockTripped();
      const lockedUntil = new Date(counted.lockedUntil!).toISOString();
      // The service locks, not the person: too many wrong guesses on `route` (docs/events.md).
      await identityChanged(this.events, trx, 'identity.locked', null, identityId, {
        lock: { reason: 'too_many_failed_attempts', route, lockedUntil },
      });
      await this.audit.appendOwn(trx, 'identity.account.locked', identityId, { route, lockedUntil });
    }
    return { wasLocked: false, tripped, locked: tripped };
  }

  /**
   * Only where the interface says (a correct second-factor sign-in or sign-in-method confirmation),
   * and an operator's lock clearance (/admin/v1), each under the identity row lock.
   */
  async clear(trx: Executor, identityId: string): Promise<void> {
    await clearLockCounter(trx, identityId);
  }
}
