import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { RequestMeta } from '../../platform/http/auth.js';
import { Problem } from '../../platform/problem.js';
import type { Hooks } from '../events/hooks/service.js';
import type { EventLog } from '../events/log.js';
import { refusedUnderSso } from '../organizations/sso-requirement/rule.js';
import { hasVerifiedFactor, insertTicket } from '../second-factors/repository.js';
import { recordAttempt } from '../sessions/repository.js';
import type { SessionGrant, SessionService } from '../sessions/service.js';
import type { Complete, ProvenIdentity, SecondFactorTicket } from './strategy.js';

/** 5 attempts per ticket (docs/api.md, "5. Sign in with the second step"). */
const TICKET_ATTEMPTS = 5;

/** What finishing a sign-in uses. */
export interface SignInCompletionDeps {
  database: Database;
  clock: Clock;
  sessions: SessionService;
  config: Pick<Config, 'lifetimes'>;
  /** `session.created`, appended with the session (docs/events.md). */
  events: EventLog;
  /** The before_sign_in hook, asked before the session's transaction (docs/events.md, "Synchronous hooks"). */
  hooks: Pick<Hooks, 'beforeSignIn'>;
}

/**
 * The one place a proven identity becomes what a sign-in answers: a second-factor ticket when a
 * first proof meets an identity holding a second factor, else a session, written with its line in
 * the sign-in history and announced to the new-sign-in notices (meta.opened). Every strategy ends
 * here; none of them opens a session or issues a ticket itself.
 */
export class SignInCompletion {
  constructor(private readonly deps: SignInCompletionDeps) {}

  readonly complete: Complete = Object.assign(
    async (proven: ProvenIdentity, meta: RequestMeta, trx?: Executor) => {
      // Require SSO (docs/sso.md, "Require SSO"): read after the strategy read the epoch, so a
      // requirement turned on after this read moves the epoch on and the session is dead on arrival.
      const exec = trx ?? this.deps.database.db;
      if (await refusedUnderSso(exec, proven.identityId, proven.firstMethod ?? proven.method))
        throw new Problem(proven.refusal ?? 'identity.sign_in_refused');
      // No token of any kind before the second step: the ticket carries the epoch read before the
      // first proof and the primary method, and is completed at POST /sign-ins/second-factors.
      if (proven.stage === 'first') {
        const ticket = await this.#ticket(exec, proven);
        if (ticket) return ticket;
      }
      if (trx) {
        // A hook is never awaited inside a transaction: the strategy asked it before opening its own.
        if (!proven.admitted) throw new Error('before_sign_in must be asked before the transaction');
        return this.#open(trx, proven, meta);
      }
      await this.#admit(proven, meta);
      return this.deps.database.db.transaction().execute((own) => this.#open(own, proven, meta));
    },
    {
      admit: (proven: Pick<ProvenIdentity, 'identityId' | 'method'>, meta: RequestMeta) =>
        this.#admit(proven, meta),
    },
  ) as Complete;

  /** The before_sign_in hook: refuses (hooks.refused, hooks.unavailable) before any session is written. */
  #admit(proven: Pick<ProvenIdentity, 'identityId' | 'method'>, meta: RequestMeta): Promise<void> {
    return this.deps.hooks.beforeSignIn({
      identityId: proven.identityId,
      method: proven.method,
      ip: meta.ip ?? null,
      userAgent: meta.userAgent ?? null,
    });
  }

  /** The session, its history line and its notice, inside `trx`. */
  async #open(trx: Executor, proven: ProvenIdentity, meta: RequestMeta): Promise<SessionGrant> {
    const { identityId, epoch, method, channel, connectionId } = proven;
    const now = this.deps.clock.now();
    const { sessionId, grant } = await this.deps.sessions.create(
      trx,
      { identityId, epoch, method, channel, connectionId, meta, now },
      proven.refusal ?? 'identity.sign_in_refused',
    );
    await recordAttempt(trx, {
      identityId,
      sessionId,
      now,
      method,
      outcome: 'succeeded',
      ip: meta.ip,
      userAgent: meta.userAgent,
    });
    await this.deps.events.append(trx, {
      type: 'session.created',
      actor: identityId,
      identityId,
      sessionId,
      data: { id: sessionId, identityId, method, createdAt: now.toISOString() },
    });
    meta.opened?.(identityId, sessionId);
    return grant;
  }

  /**
   * Issues a ticket when the identity holds an active (verified, not removed) second factor, else
   * null. Called only after the first proof succeeded. The ticket keeps the epoch read before that
   * proof, so a revocation committed in between makes the eventual session dead on arrival. In the
   * strategy's transaction when it passes one, so the spent proof and the ticket commit together.
   */
  async #ticket(exec: Executor, proven: ProvenIdentity): Promise<SecondFactorTicket | null> {
    if (!(await hasVerifiedFactor(exec, proven.identityId))) return null;
    const now = this.deps.clock.now();
    const expiresAt = new Date(now.getTime() + this.deps.config.lifetimes.ticket * 1000);
    const ticket = opaqueToken();
    await insertTicket(exec, {
      id: randomUUID(),
      hash: sha256Hex(ticket),
      identityId: proven.identityId,
      epoch: proven.epoch,
      primaryMethod: proven.method,
      ssoConnectionId: proven.connectionId ?? null,
      maxAttempts: TICKET_ATTEMPTS,
      now,
      expiresAt,
    });
    return {
      kind: 'second_factor_required',
      secondFactorTicket: ticket,
      ticketExpiresAt: expiresAt.toISOString(),
    };
  }
}
