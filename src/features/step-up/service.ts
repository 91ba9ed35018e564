import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../platform/context.js';
import { generateCode, safeEqual } from '../../platform/crypto/tokens.js';
import { Problem } from '../../platform/http/problem.js';
import { verificationText } from '../../platform/notify/notifier.js';
import { findIdentity, verifiedIdentifiers } from '../identities/repository.js';
import { hasVerifiedFactor } from '../second-factors/repository.js';
import { acceptCurrentCode } from '../second-factors/service.js';
import type { SessionPrincipal } from '../sessions/guard.js';
import { type Elevation, mintElevation } from './guard.js';
import * as repo from './repository.js';

export type StepUpChannel = 'second_factor' | 'identifier';

/** Contract 5: an out-of-band challenge allows 5 attempts (plus the identity-wide lock). */
export const STEP_UP_ATTEMPTS = 5;

export interface StepUpChallenge {
  challengeId: string;
  channel: StepUpChannel;
  challengeExpiresAt: string;
}

export class StepUpService {
  constructor(private readonly ctx: AppContext) {}

  /**
   * Starts a step-up for the calling session. A new one retires the session's earlier step-ups,
   * so only the newest code confirms. The message goes out after the commit: a slow channel never
   * holds a transaction open, and a challenge never exists without its row.
   */
  async start(principal: SessionPrincipal, requested: StepUpChannel | undefined): Promise<StepUpChallenge> {
    const { db } = this.ctx.database;
    const { identityId, sessionId } = principal;
    const hasFactor = await hasVerifiedFactor(db, identityId);
    const channel: StepUpChannel = requested ?? (hasFactor ? 'second_factor' : 'identifier');
    let recipient: { id: string; type: 'email' | 'phone'; value: string } | undefined;
    if (channel === 'second_factor') {
      if (!hasFactor) throw new Problem('identity.step_up_unavailable');
    } else {
      // Contract 3: the identity's first verified identifier (oldest verification first).
      const first = (await verifiedIdentifiers(db, identityId))[0];
      if (!first || !this.ctx.notifier.canDeliver(first.type))
        throw new Problem('identity.step_up_unavailable');
      recipient = { id: first.id, type: first.type, value: first.value };
    }
    const now = this.ctx.clock.now();
    const ttl = this.ctx.config.lifetimes.challenge;
    const expiresAt = new Date(now.getTime() + ttl * 1000);
    const challengeId = randomUUID();
    const code = recipient
      ? generateCode(this.ctx.config.verificationCodeFormat, this.ctx.config.verificationCodeLength)
      : undefined;
    await db.transaction().execute(async (trx) => {
      await repo.revokeLiveChallenges(trx, sessionId, now);
      await repo.insertChallenge(trx, {
        id: challengeId,
        identityId,
        sessionId,
        channel,
        identifierId: recipient?.id ?? null,
        codeHash: code ? this.ctx.codes.hash(code) : null,
        maxAttempts: STEP_UP_ATTEMPTS,
        now,
        expiresAt,
      });
    });
    if (recipient && code) {
      // Delivery failures are logged by the notifier; the caller may start again.
      await this.ctx.notifier.send({
        to: recipient.value,
        type: recipient.type,
        ...verificationText('step_up', code, ttl / 60),
      });
    }
    return { challengeId, channel, challengeExpiresAt: expiresAt.toISOString() };
  }

  /**
   * Mints an elevation for the calling session. A challenge that is unknown, of another session or
   * identity, spent, replaced, expired or exhausted is refused (403) without a count: nothing was
   * guessed. On a live challenge the code is checked first, never the lock, so a correct code
   * mints even on a locked account (and does not clear the lock). A wrong one charges the
   * challenge and the identity-wide counter; it answers 423 only when the account was already
   * locked before this attempt.
   */
  async confirm(principal: SessionPrincipal, challengeId: string, code: string): Promise<Elevation> {
    const now = this.ctx.clock.now();
    const { identityId, sessionId } = principal;
    const outcome = await this.ctx.database.db.transaction().execute(async (trx) => {
      const c = await repo.lockChallenge(trx, challengeId);
      const live =
        c !== undefined &&
        c.identity_id === identityId &&
        c.session_id === sessionId &&
        c.spent_at === null &&
        c.revoked_at === null &&
        new Date(c.expires_at) > now &&
        c.attempts < c.max_attempts;
      if (!live) {
        // Same keyed-hash cost as a live identifier challenge.
        this.ctx.codes.hash(code);
        return { ok: false as const, locked: false };
      }
      // Identity row before factor rows: the lock order every second-factor write follows.
      await findIdentity(trx, identityId, true);
      const proven =
        c.channel === 'identifier'
          ? safeEqual(this.ctx.codes.hash(code), c.code_hash ?? '')
          : await acceptCurrentCode(trx, this.ctx, identityId, code, now);
      if (proven) {
        if (!(await repo.spendChallenge(trx, c.id, now)))
          throw new Problem('identity.step_up_confirmation_refused');
        return {
          ok: true as const,
          elevation: await mintElevation(trx, this.ctx, { identityId, sessionId }),
        };
      }
      await repo.chargeChallenge(trx, c.id);
      const failure = await this.ctx.lock.recordFailure(trx, identityId, 'step-ups/confirmations');
      return { ok: false as const, locked: failure.wasLocked };
    });
    if (!outcome.ok) {
      throw new Problem(outcome.locked ? 'identity.step_up_locked' : 'identity.step_up_confirmation_refused');
    }
    return outcome.elevation;
  }
}
