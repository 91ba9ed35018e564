import type { Clock } from '../../../platform/clock.js';
import { sha256Hex } from '../../../platform/crypto/tokens.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { Problem } from '../../../platform/problem.js';
import { type GuessBudgets, guessSubject } from '../../../platform/rate-limit/guess-budget.js';
import type { AccountLock } from '../../identities/lock.js';
import { findIdentity } from '../../identities/repository.js';
import { type UseRecoveryCodeDeps, useRecoveryCode } from '../../recovery-codes/service.js';
import { chargeTicket, lockTicket, spendTicket, ticketHolder } from '../../second-factors/repository.js';
import { type AcceptCurrentCodeDeps, acceptCurrentCode } from '../../second-factors/service.js';
import { recordAttempt } from '../../sessions/repository.js';
import type { SessionGrant } from '../../sessions/service.js';
import type { Complete, Strategy } from '../strategy.js';

export type SecondStepProof = { code: string } | { recoveryCode: string };

export type SecondStepInput = { secondFactorTicket: string } & SecondStepProof;

/** What the second step uses. */
export interface SecondStepStrategyDeps extends AcceptCurrentCodeDeps, UseRecoveryCodeDeps {
  database: Database;
  clock: Clock;
  lock: AccountLock;
  guesses: GuessBudgets;
}

/**
 * POST /sign-ins/second-factors: the ticket a first proof earned, with an authenticator code or a
 * recovery code. Lock order: the ticket row, then the identity row, then factor or recovery-code
 * rows (the same identity-before-children order as enrolment and issuance, so the two never
 * deadlock). A dead ticket (invented, spent, expired, exhausted) is refused without a count. On a
 * live ticket the proof is checked first, never the lock: a correct one spends the ticket and
 * clears the lock; a wrong one charges the ticket and the identity-wide counter, and only a failure
 * on an account that was already locked answers 423.
 */
export class SecondStepStrategy implements Strategy<SecondStepInput, SessionGrant> {
  constructor(private readonly deps: SecondStepStrategyDeps) {}

  async signIn(input: SecondStepInput, meta: RequestMeta, complete: Complete): Promise<SessionGrant> {
    const { secondFactorTicket: ticket, ...proof } = input;
    const now = this.deps.clock.now();
    const method = 'code' in proof ? 'second_factor' : 'recovery_code';
    // The budget is the ticket's identity's: an unknown ticket has nothing to guess at.
    const holder = await ticketHolder(this.deps.database.db, sha256Hex(ticket));
    if (holder) await this.deps.guesses.admit(guessSubject.secondStep(holder));
    const outcome = await this.deps.database.db.transaction().execute(async (trx) => {
      const t = await lockTicket(trx, sha256Hex(ticket));
      if (!t || t.spentAt !== null || new Date(t.expiresAt) <= now || t.attempts >= t.maxAttempts) {
        return { ok: false as const, locked: false };
      }
      await findIdentity(trx, t.identityId, true);
      const proven =
        'code' in proof
          ? await acceptCurrentCode(trx, this.deps, { identityId: t.identityId, code: proof.code, now })
          : await useRecoveryCode(trx, this.deps, {
              identityId: t.identityId,
              code: proof.recoveryCode,
              now,
            });
      if (proven) {
        // Cannot fail under the row lock; if it ever did, the rollback also un-spends the code.
        if (!(await spendTicket(trx, t.id, now))) throw new Problem('identity.second_factor_refused');
        await this.deps.lock.clear(trx, t.identityId);
        await this.deps.guesses.forgive(trx, guessSubject.secondStep(t.identityId));
        return {
          ok: true as const,
          identityId: t.identityId,
          epoch: t.epoch,
          firstMethod: t.primaryMethod,
          connectionId: t.ssoConnectionId,
        };
      }
      await chargeTicket(trx, t.id);
      const failure = await this.deps.lock.recordFailure(trx, t.identityId, 'sign-ins/second-factors');
      await recordAttempt(trx, {
        identityId: t.identityId,
        now,
        method,
        outcome: 'refused',
        ip: meta.ip,
        userAgent: meta.userAgent,
      });
      return { ok: false as const, locked: failure.wasLocked };
    });
    if (!outcome.ok) {
      throw new Problem(
        outcome.locked ? 'identity.sign_in_second_factor_locked' : 'identity.second_factor_refused',
      );
    }
    // The session carries the epoch read before the first proof (stamped on the ticket), and the
    // connection of an SSO first step, so it names it like a one-step SSO session (docs/sso.md).
    return complete(
      {
        identityId: outcome.identityId,
        epoch: outcome.epoch,
        method,
        firstMethod: outcome.firstMethod,
        ...(outcome.connectionId ? { connectionId: outcome.connectionId } : {}),
        stage: 'final',
        refusal: 'identity.second_factor_refused',
      },
      meta,
    );
  }
}
