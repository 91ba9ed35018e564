import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../platform/pagination/page.js';
import { Problem } from '../../platform/problem.js';
import type { GuessBudgets } from '../../platform/rate-limit/guess-budget.js';
import { guessSubject } from '../../platform/rate-limit/guess-budget.js';
import type { CodeAttempt } from '../challenges/service.js';
import type { EventLog } from '../events/log.js';
import type { AccountLock } from '../identities/lock.js';
import { findIdentity, lockIdentity, verifiedIdentifiers } from '../identities/repository.js';
import { clearActiveRequiringSecondFactor } from '../organizations/repository.js';
import { secondFactorChanged } from './events.js';
import * as repo from './repository.js';
import type { EnrolmentSchema } from './schemas.js';
import { matchStep, newSecret, otpauthUri, type TotpPolicy } from './totp.js';

export type Enrolment = Static<typeof EnrolmentSchema>;

export interface SecondFactorListItem {
  id: string;
  label: string | null;
  verifiedAt: string;
  lastUsedAt: string | null;
}

function policyOf(row: repo.FactorSecretRow): TotpPolicy {
  return { algorithm: row.algorithm, digits: Number(row.digits), period: Number(row.period) };
}

/** What checking an authenticator code uses. */
export interface AcceptCurrentCodeDeps {
  sealer: Sealer;
}

/**
 * Accepts the current code of any active factor of the identity, once per factor and time step
 * (compare-and-set on last_used_step), inside the caller's transaction. Each factor is checked
 * with the policy it was enrolled under, never the policy configured now.
 */
export async function acceptCurrentCode(
  trx: Executor,
  deps: AcceptCurrentCodeDeps,
  attempt: CodeAttempt,
): Promise<boolean> {
  const { identityId, code, now } = attempt;
  for (const factor of await repo.verifiedFactors(trx, identityId)) {
    const secret = deps.sealer.open(factor.sealedSecret, factor.id);
    const step = matchStep(secret, policyOf(factor), code, now);
    if (step !== null && (await repo.useFactor(trx, factor.id, step, now))) return true;
  }
  return false;
}

/** What enrolling, listing and answering with second factors use. */
export interface SecondFactorServiceDeps extends AcceptCurrentCodeDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  lock: AccountLock;
  guesses: GuessBudgets;
  sealer: Sealer;
  cursors: CursorCodec;
  config: Pick<Config, 'totpAlgorithm' | 'totpDigits' | 'totpPeriod'>;
  /** identity.second_factor.added and .removed (docs/events.md). */
  events: EventLog;
}

export class SecondFactorService {
  constructor(private readonly deps: SecondFactorServiceDeps) {}

  /**
   * The identity row is locked first, so concurrent enrolments run one after the other: each
   * revokes the pending row of the previous one, leaving one live pending row (the newest).
   */
  async enrol(identityId: string, label: string | null): Promise<Enrolment> {
    const now = this.deps.clock.now();
    const policy: TotpPolicy = {
      algorithm: this.deps.config.totpAlgorithm,
      digits: this.deps.config.totpDigits,
      period: this.deps.config.totpPeriod,
    };
    const id = randomUUID();
    const secret = newSecret();
    const accountLabel = await this.deps.database.db.transaction().execute(async (trx) => {
      await findIdentity(trx, identityId, true);
      await repo.revokePending(trx, identityId, now);
      await repo.insertPending(trx, {
        id,
        identityId,
        label,
        // The row id as associated data: a sealed secret copied onto another row does not open.
        sealedSecret: this.deps.sealer.seal(secret, id),
        ...policy,
        now,
      });
      const first = (await verifiedIdentifiers(trx, identityId))[0];
      // The account name shown in the authenticator app: masked, so a lost phone reveals no address.
      return first ? maskIdentifier(first.type, first.value) : identityId;
    });
    return { id, secret, otpauthUri: otpauthUri(secret, policy, accountLabel) };
  }

  /**
   * Confirms the pending enrolment. Every refusal (wrong code, nothing pending, already verified)
   * is counted on the identity-wide lock and answers alike; once the lock is on (this failure
   * tripped it or it was on already) the answer is 423. A correct code never consults or clears
   * the lock. The identity row is locked before the pending row, in the same order as enrolment.
   */
  async confirm(identityId: string, code: string): Promise<void> {
    const budget = guessSubject.session(identityId);
    await this.deps.guesses.admit(budget);
    const now = this.deps.clock.now();
    const outcome = await this.deps.database.db.transaction().execute(async (trx) => {
      await findIdentity(trx, identityId, true);
      const pending = await repo.pendingFactor(trx, identityId);
      if (pending) {
        const secret = this.deps.sealer.open(pending.sealedSecret, pending.id);
        const step = matchStep(secret, policyOf(pending), code, now);
        if (step !== null && (await repo.verifyPending(trx, pending.id, step, now))) {
          await secondFactorChanged(
            this.deps.events,
            trx,
            'identity.second_factor.added',
            identityId,
            pending.id,
          );
          await this.deps.audit.append(trx, {
            name: 'identity.second_factor.verified',
            actor: identityId,
            target: pending.id,
            outcome: 'success',
          });
          await this.deps.guesses.forgive(trx, budget);
          return { ok: true as const };
        }
      }
      const failure = await this.deps.lock.recordFailure(trx, identityId, 'second-factors/confirmations');
      return { ok: false as const, locked: failure.locked };
    });
    if (!outcome.ok) {
      throw new Problem(
        outcome.locked ? 'identity.second_factor_locked' : 'identity.second_factor_confirmation_refused',
      );
    }
  }

  async list(scope: CursorScope, query: PageQuery) {
    const fetch = (window: KeysetWindow) => repo.verifiedPage(this.deps.database.db, scope.subject, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.verifiedAt);
    const data: SecondFactorListItem[] = items.map((r) => ({
      id: r.id,
      label: r.label,
      verifiedAt: new Date(r.verifiedAt).toISOString(),
      lastUsedAt: r.lastUsedAt ? new Date(r.lastUsedAt).toISOString() : null,
    }));
    return { items: data, pageInfo };
  }

  /**
   * Unknown, foreign, pending and already removed ids are the same "not found". Under the identity
   * row lock (the order of enrolment): if this was the identity's last second factor, its sessions
   * stop acting in organizations that require one, as a switch would now refuse them.
   */
  async remove(identityId: string, id: string): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.database.db.transaction().execute(async (trx) => {
      await lockIdentity(trx, identityId);
      if (!(await repo.revokeVerified(trx, id, identityId, now)))
        throw new Problem('identity.second_factor_not_found');
      const cleared = await clearActiveRequiringSecondFactor(trx, identityId);
      await secondFactorChanged(this.deps.events, trx, 'identity.second_factor.removed', identityId, id);
      await this.deps.audit.append(trx, {
        name: 'identity.second_factor.removed',
        actor: identityId,
        target: id,
        outcome: 'success',
        ...(cleared > 0 ? { details: { sessionsLeftOrganization: cleared } } : {}),
      });
    });
  }
}
