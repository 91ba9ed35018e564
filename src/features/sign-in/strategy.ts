import type { Static } from '@sinclair/typebox';
import type { Executor } from '../../platform/db/database.js';
import type { RequestMeta } from '../../platform/http/auth.js';
import type { ProblemCode } from '../../platform/problem.js';
import type { SessionGrant } from '../sessions/service.js';
import type { SecondFactorTicketSchema } from './schemas.js';

/**
 * What a sign-in answers when a second step is needed (docs/api.md, "5. Sign in with the second
 * step"). No token.
 */
export type SecondFactorTicket = Static<typeof SecondFactorTicketSchema>;

/** What a sign-in answers: a session, or a ticket for the second step. */
export type SignInResult = SessionGrant | SecondFactorTicket;

/**
 * What a strategy proved: whose identity, by which method, and how far that gets the person.
 * complete.ts turns it into a session or a second-factor ticket and knows nothing of the proof.
 */
export interface ProvenIdentity {
  identityId: string;
  /**
   * The identity's session epoch read before the proof was checked: a revocation committed while
   * the proof ran moves it on, and the session opened with this one is dead on arrival.
   */
  epoch: number;
  /** Recorded on the session and in the sign-in history: 'password', 'provider', 'passkey', … */
  method: string;
  /**
   * The first factor when this proof is the second step (the ticket's primary method): "require
   * SSO" asks what opened the sign-in, not what finished it. Defaults to `method`.
   */
  firstMethod?: string;
  /** The channel a one-time code went out on (method 'code'): amr `email` or `sms` (RFC 8176). */
  channel?: 'email' | 'phone';
  /** The organization's connection a sign-in came through (method 'sso'): named by the session. */
  connectionId?: string;
  /**
   * 'first': one factor (a password, an upstream account), so an identity holding a second factor
   * gets a ticket for the second step. 'final': nothing is left to prove (a passkey with user
   * verification, the second step itself): a session at once.
   */
  stage: 'first' | 'final';
  /** The strategy's own refusal, answered when the identity was disabled meanwhile (default identity.sign_in_refused). */
  refusal?: ProblemCode;
  /** Set by a strategy passing its transaction: it called `complete.admit` before opening it. */
  admitted?: true;
}

/**
 * Hands a proven identity to complete.ts. A strategy whose proof is spent by compare-and-set (a
 * passkey's challenge) passes its transaction, so the spent proof and the session commit together
 * or not at all; the others pass none. The before_sign_in hook is an HTTP call, never made inside
 * a transaction: complete asks it itself when given none; a strategy passing its transaction calls
 * `admit` first, outside it, and marks the proven identity `admitted`.
 */
export interface Complete {
  (proven: ProvenIdentity & { stage: 'final' }, meta: RequestMeta, trx?: Executor): Promise<SessionGrant>;
  (proven: ProvenIdentity, meta: RequestMeta, trx?: Executor): Promise<SignInResult>;
  /** The before_sign_in hook: resolves when the sign-in may open a session, else throws its refusal. */
  admit(proven: Pick<ProvenIdentity, 'identityId' | 'method'>, meta: RequestMeta): Promise<void>;
}

/**
 * One way to prove who you are (Ory Kratos's login strategy): it checks its own input and calls
 * `complete` with the identity it proved, or throws its refusal — the same answer, at the same cost,
 * for every failure (docs/decisions.md, "Guessing, proxies and hardening"). How each proof is
 * checked lives in the strategy alone; what a proven identity becomes lives in complete.ts alone.
 */
export interface Strategy<Input, Result extends SignInResult = SignInResult> {
  signIn(input: Input, meta: RequestMeta, complete: Complete): Promise<Result>;
}
