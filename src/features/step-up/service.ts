import type { Static } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { RequestMeta, SessionPrincipal } from '../../platform/http/auth.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import type { Notifier } from '../../platform/notify/notifier.js';
import { Problem } from '../../platform/problem.js';
import type { GuessBudgets, MessageLimits } from '../../platform/rate-limit/guess-budget.js';
import { destinationSubject, guessSubject, stepUpSubjects } from '../../platform/rate-limit/guess-budget.js';
import { revokeChallenges, type StepUpChannel } from '../challenges/repository.js';
import type { ChallengeFlow } from '../challenges/service.js';
import { lockIdentity, verifiedIdentifiers } from '../identities/repository.js';
import { type UseRecoveryCodeDeps, useRecoveryCode } from '../recovery-codes/service.js';
import { hasVerifiedFactor } from '../second-factors/repository.js';
import { type AcceptCurrentCodeDeps, acceptCurrentCode } from '../second-factors/service.js';
import { insertElevation } from './repository.js';
import type { ElevationSchema, StepUpChallengeSchema } from './schemas.js';

export type { StepUpChannel };

export type Elevation = Static<typeof ElevationSchema>;

/**
 * How a step-up proved itself. `identifier` (a code sent to an address) and `provider` (an upstream
 * ID token) are one factor each; the authenticator, a recovery code and a passkey with user
 * verification prove the strongest factor an identity can hold.
 */
export type StepUpProof = StepUpChannel | 'provider' | 'passkey';

const ONE_FACTOR: ReadonlySet<StepUpProof> = new Set<StepUpProof>(['identifier', 'provider']);

/**
 * The rule of every step-up (docs/api.md, "1. Step up: get an elevation token"; docs/security.md,
 * "Security round 3: the findings of the third attack", finding 1): once the identity holds a
 * verified second factor, a one-factor proof no longer elevates, or whoever holds a session and a
 * mailbox (or the upstream account) could remove the authenticator. In a transaction the identity
 * row is locked first, the order every second-factor write follows, so a factor confirmed
 * concurrently is either seen here or confirmed after the elevation exists.
 */
export async function stepUpProofAllowed(
  exec: Executor,
  identityId: string,
  proof: StepUpProof,
  inTransaction: boolean,
): Promise<boolean> {
  if (!ONE_FACTOR.has(proof)) return true;
  if (inTransaction) await lockIdentity(exec, identityId);
  return !(await hasVerifiedFactor(exec, identityId));
}

/** What minting an elevation uses. */
export interface MintElevationDeps {
  clock: Clock;
  config: Pick<Config, 'lifetimes'>;
}

/**
 * Mints an elevation for one session of one identity, inside the caller's transaction (so a
 * provider step-up spends its nonce and mints in one commit). Every channel names the proof it
 * checked and the rule above is asked here, so no channel can mint past it. Opaque 256-bit value;
 * only its SHA-256 is stored. It can be presented for several writes until it expires or its
 * session ends.
 */
export async function mintElevation(
  trx: Executor,
  deps: MintElevationDeps,
  target: { identityId: string; sessionId: string },
  proof: StepUpProof,
): Promise<Elevation> {
  if (!(await stepUpProofAllowed(trx, target.identityId, proof, true)))
    throw new Problem('identity.step_up_unavailable');
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.config.lifetimes.elevation * 1000);
  const token = opaqueToken();
  await insertElevation(trx, {
    tokenHash: sha256Hex(token),
    identityId: target.identityId,
    sessionId: target.sessionId,
    now,
    expiresAt,
  });
  return { elevationToken: token, elevationExpiresAt: expiresAt.toISOString() };
}

export type StepUpChallenge = Static<typeof StepUpChallengeSchema>;

/** What a step-up by a code uses. */
export interface StepUpServiceDeps extends MintElevationDeps, AcceptCurrentCodeDeps, UseRecoveryCodeDeps {
  database: Database;
  clock: Clock;
  challenges: ChallengeFlow;
  guesses: GuessBudgets;
  messages: MessageLimits;
  notifier: Notifier;
}

export class StepUpService {
  constructor(private readonly deps: StepUpServiceDeps) {}

  /**
   * Starts a step-up for the calling session. A new one retires the session's earlier step-ups,
   * so only the newest code confirms. The message goes out after the commit: a slow channel never
   * holds a transaction open, and a challenge never exists without its row.
   */
  async start(
    principal: SessionPrincipal,
    requested: StepUpChannel | undefined,
    meta: RequestMeta,
  ): Promise<StepUpChallenge> {
    const { db } = this.deps.database;
    const { identityId, sessionId } = principal;
    const hasFactor = await hasVerifiedFactor(db, identityId);
    const channel: StepUpChannel = requested ?? (hasFactor ? 'second_factor' : 'identifier');
    let recipient: { id: string; type: 'email' | 'phone'; value: string } | undefined;
    // With a verified factor the step-up proves it (its code, or a recovery code); owning the
    // mailbox is no longer enough, so the identifier channel is refused (the rule of
    // stepUpProofAllowed, asked again when the elevation is minted). Without a factor there is
    // nothing for the authenticator or a recovery code to prove.
    const allowed = channel === 'identifier' ? !hasFactor : hasFactor;
    if (!allowed) throw new Problem('identity.step_up_unavailable');
    if (channel === 'identifier') {
      // The identity's first verified identifier (oldest verification first).
      const first = (await verifiedIdentifiers(db, identityId))[0];
      if (!first || !this.deps.notifier.canDeliver(first.type))
        throw new Problem('identity.step_up_unavailable');
      recipient = { id: first.id, type: first.type, value: first.value };
      // A step-up that sends a message counts per identity, per address and, like every message,
      // per destination (SENDS_A_MESSAGE).
      await this.deps.messages.count([
        ...stepUpSubjects(identityId, meta.ip ?? ''),
        destinationSubject(first),
      ]);
    }
    const challenge = await db.transaction().execute(async (trx) => {
      await revokeChallenges(trx, { sessionId }, this.deps.clock.now());
      return this.deps.challenges.issue(trx, {
        purpose: 'step_up',
        identityId,
        sessionId,
        channel,
        identifierId: recipient?.id,
        withCode: recipient !== undefined,
      });
    });
    if (recipient && challenge.code) {
      // Delivery failures are logged by the notifier; the caller may start again.
      await this.deps.challenges.deliver('step_up', recipient, challenge.code, { identityId });
    }
    return {
      challengeId: challenge.id,
      channel,
      challengeExpiresAt: challenge.expiresAt.toISOString(),
      // The person's own address, masked: the page says where to look for the code.
      ...(recipient ? { sentTo: maskIdentifier(recipient.type, recipient.value) } : {}),
    };
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
    const { identityId, sessionId } = principal;
    const budget = guessSubject.session(identityId);
    // Before any look at the code: an attempt made before its time is 429, right or wrong.
    await this.deps.guesses.admit(budget);
    const outcome = await this.deps.database.db.transaction().execute(async (trx) => {
      const answer = await this.deps.challenges.answerStepUp(trx, {
        challengeId,
        identityId,
        sessionId,
        code,
        route: 'step-ups/confirmations',
        proveWithoutCode: (t, channel, now) =>
          channel === 'recovery_code'
            ? useRecoveryCode(t, this.deps, { identityId, code, now })
            : acceptCurrentCode(t, this.deps, { identityId, code, now }),
      });
      // A spend lost after a correct proof rolls back whatever the proof consumed.
      if (answer === 'lost') throw new Problem('identity.step_up_confirmation_refused');
      if (!answer.ok) return answer;
      await this.deps.guesses.forgive(trx, budget);
      const elevation = await mintElevation(trx, this.deps, { identityId, sessionId }, answer.channel);
      return { ok: true as const, elevation };
    });
    if (!outcome.ok) {
      throw new Problem(
        outcome.failure?.wasLocked ? 'identity.step_up_locked' : 'identity.step_up_confirmation_refused',
      );
    }
    return outcome.elevation;
  }
}
