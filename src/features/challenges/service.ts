import { randomUUID } from 'node:crypto';
import type { CodeFormat } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { type CodeHasher, generateCode, safeEqual } from '../../platform/crypto/tokens.js';
import type { Db, Executor } from '../../platform/db/database.js';
import type { DeliveryResult, Notifier } from '../../platform/notify/notifier.js';
import { codeMessage, existingAccountMessage, type MessageBrand } from '../../platform/notify/templates.js';
import { Problem } from '../../platform/problem.js';
import type { GuessBudgets } from '../../platform/rate-limit/guess-budget.js';
import type { Locale } from '../../shared/locales.js';
import {
  type IdentifierInput,
  type NormalisedIdentifier,
  normaliseIdentifier,
} from '../identities/identifier.js';
import type { AccountLock, FailureOutcome } from '../identities/lock.js';
import { identityLocale, lockIdentity, NOBODY } from '../identities/repository.js';
import {
  type ChallengeOwner,
  type ChallengePurpose,
  type ChallengeRow,
  chargeChallenge,
  chargeLiveChallenges,
  findChallenge,
  insertChallenge,
  liveChallenges,
  type NewChallenge,
  type StepUpChannel,
  spendChallenge,
} from './repository.js';

/** Owns no challenge: what an answer for an address no account holds reads and charges. */
const NO_OWNER: ChallengeOwner = { identifierId: NOBODY };

/** Five attempts per challenge (docs/api.md, "1. Sign up"); the identity-wide lock counts on top. */
export const CHALLENGE_MAX_ATTEMPTS = 5;

export interface ChallengeSettings {
  format: CodeFormat;
  length: number;
  /** Seconds. */
  lifetime: number;
  /** The product's name and support link every message carries (BRAND_*). */
  brand: MessageBrand;
}

/**
 * Whose language a code is written in: the identity's own (identities.locale), or, for an address
 * no identity has confirmed yet (a sign-up), the request's.
 */
export type Recipient = { identityId: string } | { locale: Locale };

export type IssueSpec = Omit<NewChallenge, 'id' | 'codeHash' | 'maxAttempts' | 'now' | 'expiresAt'> & {
  /** False for a step-up answered by the authenticator: no code of its own. */
  withCode?: boolean;
};

export interface IssuedChallenge {
  id: string;
  /** The code to deliver; never stored, never returned by a route. */
  code: string | undefined;
  expiresAt: Date;
}

/** A code offered by an identity at an instant, to check inside the caller's transaction. */
export interface CodeAttempt {
  identityId: string;
  code: string;
  now: Date;
}

/** The outcome of a failed answer, for the route to word its refusal. */
export interface Refused {
  ok: false;
  /** The identity-wide lock's view of this failure; absent when nothing was counted. */
  failure?: FailureOutcome;
}

export interface OutOfBandAnswer<T> {
  purpose: ChallengePurpose;
  /** Undefined when the address or identity is unknown: the same statements match nothing. */
  owner: ChallengeOwner | undefined;
  /** Whose lock a failure counts on. */
  identityId: string | undefined;
  code: string;
  /** The route name recorded with a lock failure. */
  route: string;
  /**
   * The guess budget the attempt is charged to (guessSubject), admitted before the code is looked
   * at; undefined when nothing can be guessed (an address that cannot hold a challenge).
   */
  budget: string | undefined;
  /**
   * A failure is counted on the lock even when the owner has no live challenge (an authenticated
   * caller answering nothing is still guessing); otherwise only when something was charged.
   */
  countWithoutLiveChallenge?: boolean;
  /**
   * Picks the challenge to admit among those whose code matched, outside any transaction (Argon2
   * work belongs here, never under a row lock). Default: the first match.
   */
  select?: (matches: ChallengeRow[]) => Promise<ChallengeRow | undefined>;
  /** The act the code authorises, in the transaction that spent the challenge. */
  admit: (trx: Executor, challenge: ChallengeRow, now: Date) => Promise<T>;
}

/**
 * Who answers a code sent to an identifier: the identifier's challenges, and its identity's lock.
 * An unknown identifier owns nothing, so nothing is found or charged.
 */
export function identifierOwner(
  identifier: { id: string; identityId: string } | undefined,
): Pick<OutOfBandAnswer<unknown>, 'owner' | 'identityId'> {
  return identifier
    ? { owner: { identifierId: identifier.id }, identityId: identifier.identityId }
    : { owner: undefined, identityId: undefined };
}

export interface StepUpAnswer {
  challengeId: string;
  identityId: string;
  sessionId: string;
  code: string;
  route: string;
  /**
   * Proves a challenge with no code of its own, by its channel: the authenticator's current code or
   * a recovery code (inside the transaction, which rolls the proof back if the spend is lost).
   */
  proveWithoutCode: (trx: Executor, channel: StepUpChannel, now: Date) => Promise<boolean>;
}

/**
 * The one challenge flow: every out-of-band code (sign-up, sign-in method, password recovery) and
 * every step-up is issued and answered here, on one table and one state machine. An answer is
 * compared in constant time with every candidate (no early exit); a match is spent by
 * compare-and-set in the transaction of the act it authorises; a miss charges the attempt and
 * counts one failure on the identity-wide lock. The lock is never consulted before a correct code.
 */
export class ChallengeFlow {
  constructor(
    private readonly db: Db,
    private readonly codes: CodeHasher,
    private readonly lock: AccountLock,
    private readonly clock: Clock,
    private readonly settings: ChallengeSettings,
    private readonly notifier: Notifier,
    private readonly guesses: GuessBudgets,
  ) {}

  /**
   * The address a code is to be sent to, normalised. Refused as unusable (its shape) or its channel
   * unavailable (the configuration): never for anything about an account, so both can come first.
   */
  reachableAddress(input: IdentifierInput): NormalisedIdentifier {
    const address = normaliseIdentifier(input);
    if (!address) throw new Problem('identity.identifier_unusable');
    if (!this.notifier.canDeliver(address.type)) throw new Problem('identity.identifier_channel_unavailable');
    return address;
  }

  /**
   * Sends an issued challenge's code (and, for a sign-in code, its link) to its address, in the
   * recipient's language; after the commit, never inside it.
   */
  async deliver(
    purpose: ChallengePurpose,
    to: NormalisedIdentifier,
    code: string,
    recipient: Recipient,
    link?: string,
  ): Promise<DeliveryResult> {
    const minutes = this.settings.lifetime / 60;
    const locale =
      'locale' in recipient ? recipient.locale : await identityLocale(this.db, recipient.identityId);
    const message = codeMessage(locale, this.settings.brand, purpose, code, minutes, link);
    return this.notifier.send({ to: to.value, type: to.type, ...message });
  }

  /**
   * Tells an address that it already has an account (a sign-up by code its owner may not answer by
   * code), without a code, in the owner's language; after the commit, like a code.
   */
  notifyExistingAccount(to: NormalisedIdentifier, locale: Locale): Promise<DeliveryResult> {
    const message = existingAccountMessage(locale, this.settings.brand);
    return this.notifier.send({ to: to.value, type: to.type, ...message });
  }

  /** Writes a challenge in the caller's transaction and returns its code for delivery. */
  async issue(trx: Executor, spec: IssueSpec): Promise<IssuedChallenge> {
    const { withCode = true, ...row } = spec;
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.settings.lifetime * 1000);
    const code = withCode ? generateCode(this.settings.format, this.settings.length) : undefined;
    const id = randomUUID();
    await insertChallenge(trx, {
      ...row,
      id,
      codeHash: code ? this.codes.hash(code) : null,
      maxAttempts: CHALLENGE_MAX_ATTEMPTS,
      now,
      expiresAt,
    });
    return { id, code, expiresAt };
  }

  /** The lifetime a challenge issued now would have (answers that promise it before issuing). */
  expiryFromNow(): Date {
    return new Date(this.clock.now().getTime() + this.settings.lifetime * 1000);
  }

  /**
   * Answers an out-of-band code. The admission, the read of the live challenges and, for a miss,
   * the charge and the lock's count are one transaction that commits before any Argon2 work; a
   * match is spent by the compare-and-set of a second transaction, which re-checks everything the
   * read relied on. An address no account holds runs the same statements keyed to nobody (they
   * match no row) in the same one commit, so the answer's time does not tell them apart
   * (docs/decisions.md, "Guessing, proxies and hardening", equal time).
   */
  async answer<T>(a: OutOfBandAnswer<T>): Promise<{ ok: true; value: T } | Refused> {
    const owner = a.owner ?? NO_OWNER;
    const hash = this.codes.hash(a.code);
    const read = await this.db.transaction().execute(async (trx) => {
      if (a.budget) await this.guesses.admit(a.budget, trx);
      const live = await liveChallenges(trx, a.purpose, owner, this.clock.now());
      const matches = live.filter((c) => safeEqual(c.codeHash ?? '', hash));
      return matches.length > 0 ? { matches } : { matches, failure: await this.#miss(trx, a, owner) };
    });
    const chosen = a.select ? await a.select(read.matches) : read.matches[0];
    if (!chosen) {
      if (read.matches.length === 0) return { ok: false, failure: read.failure };
      // A code matched but what came with it did not (a sign-up's password): still a miss.
      return { ok: false, failure: await this.db.transaction().execute((trx) => this.#miss(trx, a, owner)) };
    }
    const now = this.clock.now();
    return this.db.transaction().execute(async (trx) => {
      // Of two answers racing with one code, only one spends it.
      if (!(await spendChallenge(trx, chosen.id, now))) return { ok: false as const };
      if (a.budget) await this.guesses.forgive(trx, a.budget);
      return { ok: true as const, value: await a.admit(trx, chosen, now) };
    });
  }

  /**
   * A miss costs one attempt on every live challenge of the owner for the purpose, and one failure
   * on the identity-wide lock however many it charged; nothing charged, nothing counted (unless
   * answering nothing is itself a guess). The same two statements run for nobody.
   */
  async #miss(
    trx: Executor,
    a: OutOfBandAnswer<unknown>,
    owner: ChallengeOwner,
  ): Promise<FailureOutcome | undefined> {
    const charged = await chargeLiveChallenges(trx, a.purpose, owner, this.clock.now());
    const counts = a.owner !== undefined && (charged > 0 || a.countWithoutLiveChallenge === true);
    return this.lock.recordFailure(trx, counts ? a.identityId : undefined, a.route);
  }

  /**
   * Answers a step-up challenge, in the caller's transaction (so the elevation is minted in the
   * same commit). The identity row is locked first, the order every second-factor write follows,
   * so answers to one challenge are decided one after the other. A challenge that is unknown, of
   * another session, spent, replaced, expired or exhausted is refused without a count: nothing was
   * guessed. Returns 'lost' when the spend lost a race after a correct proof: the caller must
   * throw, so the transaction rolls back whatever the proof consumed.
   */
  async answerStepUp(
    trx: Executor,
    a: StepUpAnswer,
  ): Promise<{ ok: true; channel: StepUpChannel } | Refused | 'lost'> {
    const now = this.clock.now();
    await lockIdentity(trx, a.identityId);
    const c = await findChallenge(trx, a.challengeId);
    const live =
      c !== undefined &&
      c.purpose === 'step_up' &&
      c.identityId === a.identityId &&
      c.sessionId === a.sessionId &&
      c.spentAt === null &&
      c.revokedAt === null &&
      new Date(c.expiresAt) > now &&
      c.attempts < c.maxAttempts;
    // The keyed hash is computed whatever the challenge, so a dead one costs what a live one does.
    const hash = this.codes.hash(a.code);
    if (!live) return { ok: false };
    const proven =
      c.channel === 'identifier'
        ? safeEqual(hash, c.codeHash ?? '')
        : await a.proveWithoutCode(trx, c.channel as StepUpChannel, now);
    if (proven)
      return (await spendChallenge(trx, c.id, now))
        ? { ok: true, channel: c.channel as StepUpChannel }
        : 'lost';
    if (!(await chargeChallenge(trx, c.id, now))) return { ok: false };
    return { ok: false, failure: await this.lock.recordFailure(trx, a.identityId, a.route) };
  }
}
