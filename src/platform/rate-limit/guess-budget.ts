import type { Clock } from '../clock.js';
import { hmacHex } from '../crypto/tokens.js';
import type { Db, Executor } from '../db/database.js';
import type { Signals } from '../metrics/signals.js';
import { Problem } from '../problem.js';
import { addressBucket } from './address.js';
import {
  admitAttempt,
  type BudgetPolicy,
  budgetState,
  budgetStateOf,
  countSend,
  forgiveAttempts,
} from './repository.js';
import type { RateLimitSetting } from './setting.js';

/**
 * Whose guesses share one budget. A subject names who is guessing at what, never the client's
 * address alone (addresses are unlimited to an attacker):
 * - `session`: one identity's step-up, enrolment and sign-in-method confirmations, all of which
 *   need a live session (a stranger without one cannot touch it);
 * - `secondStep`: one identity's second-factor sign-ins (needs the password's ticket);
 * - `password`: password sign-ins for one identifier from one address prefix, so a stranger who
 *   knows only the identifier cannot hold back the owner's correct password from elsewhere;
 * - `currentPassword`: the current password at a password change, per identity (the caller holds a
 *   session, so a stolen access token cannot turn the route into an unlimited password oracle);
 * - `code`: a code sent to one identifier for one purpose (sign-up, recovery), whether or not an
 *   account holds it, so the answer stays the same.
 */
export const guessSubject = {
  session: (identityId: string) => `session:${identityId}`,
  secondStep: (identityId: string) => `second-step:${identityId}`,
  password: (identifier: string, addressPrefix: string) => `password:${identifier}|${addressPrefix}`,
  passkey: (credentialId: string, addressPrefix: string) => `passkey:${credentialId}|${addressPrefix}`,
  /** The current password at POST /password-changes: the caller already holds a session. */
  currentPassword: (identityId: string) => `current-password:${identityId}`,
  code: (purpose: string, identifier: string) => `code:${purpose}:${identifier}`,
  /** A client secret presented at the OpenID Provider's token, introspection or revocation endpoint. */
  client: (clientId: string) => `client:${clientId}`,
};

/** The 429 of a budget or a message window: Retry-After is the whole seconds until `until`. */
function tooEarly(now: Date, until: Date): Problem {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new Problem('rate_limit.exceeded', { headers: { 'retry-after': String(seconds) } });
}

/**
 * Per-subject guess budgets (docs/security.md, "The guessing bound"; RATE_LIMIT_GUESSES). An
 * attempt is admitted, and counted, before the secret is looked at; past the free allowance each
 * further attempt must wait a growing delay, and one made early is 429 rate_limit.exceeded with
 * Retry-After, right or wrong, unchecked. A success forgives the subject's count. This is rate
 * limiting, apart from the identity-wide lock (which keeps its statuses and is never consulted for
 * a correct secret that arrives in time).
 */
export class GuessBudgets {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** config.keys.guessBudgets: subjects are stored as keyed hashes only. */
    private readonly key: Buffer,
    private readonly policy: BudgetPolicy,
    private readonly signals: Signals,
  ) {}

  #stored(subject: string): string {
    return hmacHex(this.key, subject);
  }

  /**
   * Admits one attempt, or throws 429. In its own statement by default; in a caller's transaction
   * that commits before the secret is checked when the attempt's other bookkeeping belongs with it
   * (a later rollback must not undo the count).
   */
  async admit(subject: string, exec: Executor = this.db): Promise<void> {
    const now = this.clock.now();
    const nextAt = await admitAttempt(exec, this.#stored(subject), now, this.policy);
    if (nextAt !== null) {
      // The kind of subject only (session, second-step, password, code): never who.
      this.signals.refused(`guesses:${subject.slice(0, subject.indexOf(':'))}`);
      throw tooEarly(now, nextAt);
    }
  }

  /**
   * For secrets too long to guess (client secrets): refuses with 429 while the subject must wait,
   * without counting; the caller then checks the secret and counts only a failure (`admit`) or
   * forgives a success when a count is held. A correct secret never queues behind concurrent
   * ones; concurrent wrong guesses in one instant can pass the check together, which changes
   * nothing against a 256-bit secret (docs/security.md, "The OpenID Provider").
   */
  async notWaiting(
    subject: string,
    /**
     * Reads the budget's row (by its stored key) in a statement of the caller's that reads more
     * (the OpenID Provider's token lookup): it must read the table, never a copy, so every
     * instance's counts hold.
     */
    read?: (key: string) => Promise<{ counted: boolean; nextAttemptAt: Date | null }>,
  ): Promise<{ counted: boolean }> {
    const now = this.clock.now();
    const state = read
      ? budgetStateOf(await read(this.#stored(subject)), now)
      : await budgetState(this.db, this.#stored(subject), now);
    if (state.waitUntil) {
      this.signals.refused(`guesses:${subject.slice(0, subject.indexOf(':'))}`);
      throw tooEarly(now, state.waitUntil);
    }
    return { counted: state.counted };
  }

  /** After a success (in its transaction when there is one): the subject starts afresh. */
  forgive(exec: Executor, subject: string): Promise<void> {
    return forgiveAttempts(exec, this.#stored(subject));
  }
}

/**
 * What messages are counted against (MessageLimits): `key` names the window (stored only as a keyed
 * hash, never read back) and `refusal` is the rule a refusal reports (Signals `refused`), the kind
 * only, never who: `route:<pattern>` for a sending route's per-address count, `messages` for a
 * message window. Built by the functions below, never parsed back out of the key.
 */
export interface MessageSubject {
  readonly key: string;
  readonly refusal: 'messages' | `route:${string}`;
}

/** A message window: every kind of message to a destination, or a step-up's per identity or address. */
function messageWindow(key: string): MessageSubject {
  return { key, refusal: 'messages' };
}

/**
 * The subject every code to one destination counts against, except recovery codes (below): sign-up,
 * sign-in-method and step-up codes and organization invitations share one window per mailbox or
 * number, so mixing kinds or client addresses does not multiply what one inbox receives. An email
 * address counts as the mailbox it lands in as far as the address shows, or an attacker could mint
 * unlimited fresh destinations for one inbox: a `+tag` is dropped, and Gmail's dots and its
 * googlemail.com spelling are folded. Two addresses folded together only share a window, never an
 * account. A number is its E.164 form.
 */
export function destinationSubject(to: { type: string; value: string }): MessageSubject {
  return messageWindow(`to:${folded(to)}`);
}

/**
 * The subject a password-recovery start counts against: a window of its own per destination, that
 * only recovery starts spend, counted alike whether or not an account holds the address. Every
 * other message (a sign-up's code, a step-up's, a new-sign-in notice) goes to an address only when
 * it is in use, so a window shared with them would reach its 429 earlier for an address in use and
 * tell a stranger that it is one.
 */
export function recoveryDestinationSubject(to: { type: string; value: string }): MessageSubject {
  return messageWindow(`recovery-to:${folded(to)}`);
}

/**
 * The subject a sign-in code's send counts against (POST /sign-ins/codes): a window of its own per
 * destination, that only those sends spend, counted alike whether or not the address may sign in
 * by code, for the reason the recovery window has one (recoveryDestinationSubject).
 */
export function signInCodeDestinationSubject(to: { type: string; value: string }): MessageSubject {
  return messageWindow(`sign-in-code-to:${folded(to)}`);
}

/** A destination as its windows name it: the mailbox of an email address, a number as it is. */
function folded(to: { type: string; value: string }): string {
  return `${to.type}:${to.type === 'email' ? mailbox(to.value) : to.value}`;
}

/**
 * The subjects a step-up's code counts against besides its destination: one window per identity
 * and one per client address (an IPv6 address by its /64).
 */
export function stepUpSubjects(identityId: string, ip: string): MessageSubject[] {
  return [messageWindow(`step-up:${identityId}`), messageWindow(`step-up:${addressBucket(ip)}`)];
}

/**
 * The subject a sending route counts its messages against per client address (an IPv6 address by
 * its /64): RATE_LIMIT_SENDS_A_MESSAGE per client address and route, `route` being the route's
 * pattern (`/api/v1/sign-ups`). Only a request that sends (or, at recovery, answers as if it had
 * sent) is counted, in the transaction that decides to send; a refusal that sends nothing (400,
 * 409, 422, 429) never spends it, so a person's typos cannot lock their sends out. Requests that
 * send nothing are bounded by the route's own, wider limiter instead (RATE_LIMIT_ANSWERS_A_CHALLENGE,
 * rate-limit.ts `sendingRouteLimit`).
 */
export function senderSubject(route: string, ip: string): MessageSubject {
  return { key: `sends:${route}|${addressBucket(ip)}`, refusal: `route:${route}` };
}

/** A normalised (lower-cased) address's mailbox: `a.da+news@googlemail.com` is `ada@gmail.com`. */
function mailbox(address: string): string {
  const at = address.lastIndexOf('@');
  let local = address.slice(0, at);
  let domain = address.slice(at + 1);
  const plus = local.indexOf('+');
  if (plus > 0) local = local.slice(0, plus);
  if (domain === 'googlemail.com') domain = 'gmail.com';
  if (domain === 'gmail.com') local = local.replaceAll('.', '');
  return `${local}@${domain}`;
}

/**
 * Messages sent per subject, counted in the database so every instance shares the count: every
 * message per destination (destinationSubject), a step-up's code per identity and per address too
 * (docs/security.md, "Messages per destination"). A message past the limit of any of its subjects is
 * not sent: a request that would send it is 429 rate_limit.exceeded with Retry-After. Notices (new
 * sign-ins, security changes) are never counted here: strangers' requests can spend these windows,
 * and a notice has a bound of its own per identity (docs/security.md, "Notices").
 */
export class MessageLimits {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** config.keys.guessBudgets: subjects are stored as keyed hashes only. */
    private readonly key: Buffer,
    private readonly setting: RateLimitSetting,
    private readonly signals: Signals,
  ) {}

  /**
   * Counts one message against every subject, or throws 429 when any of them is past its limit. In
   * its own statements by default; in a caller's transaction when the count must stand or fall with
   * what the request writes (a refusal that rolls it back has sent nothing).
   */
  async count(subjects: MessageSubject[], exec: Executor = this.db): Promise<void> {
    const now = this.clock.now();
    const tripped = await this.#countAll(exec, subjects, now);
    if (tripped.latest) {
      // A sending route's per-address count is the route's limit (`route:<pattern>`); the others
      // are message windows. The kind only, never who.
      for (const subject of tripped.subjects) this.signals.refused(subject.refusal);
      throw tooEarly(now, tripped.latest);
    }
  }

  /**
   * Counts against every subject: the latest end of a window that is past its limit, if any, and
   * the subjects past their limits.
   */
  async #countAll(
    exec: Executor,
    subjects: MessageSubject[],
    now: Date,
  ): Promise<{ latest: Date | undefined; subjects: MessageSubject[] }> {
    let latest: Date | undefined;
    const tripped: MessageSubject[] = [];
    for (const subject of subjects) {
      const { sent, windowEndsAt } = await countSend(
        exec,
        hmacHex(this.key, `send:${subject.key}`),
        now,
        this.setting.windowSeconds,
      );
      if (sent > this.setting.max) {
        tripped.push(subject);
        if (!latest || windowEndsAt > latest) latest = windowEndsAt;
      }
    }
    return { latest, subjects: tripped };
  }
}
