import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { Problem } from '../../../platform/problem.js';
import {
  type GuessBudgets,
  guessSubject,
  type MessageLimits,
  type MessageSubject,
  signInCodeDestinationSubject,
} from '../../../platform/rate-limit/guess-budget.js';
import { findChallenge, revokeChallenges } from '../../challenges/repository.js';
import type { ChallengeFlow } from '../../challenges/service.js';
import {
  type IdentifierInput,
  type NormalisedIdentifier,
  normaliseIdentifier,
} from '../../identities/identifier.js';
import { findIdentifier, findIdentity, lockIdentity, NOBODY } from '../../identities/repository.js';
import { refuseAddressUnderSso } from '../../organizations/sso-requirement/rule.js';
import { maySignInByCode } from '../code-rule.js';
import type { SignInLinks } from '../links.js';
import type { Complete, SignInResult, Strategy } from '../strategy.js';

/** The route name a wrong code is recorded with on the identity-wide lock. */
const LOCK_ROUTE = 'sign-ins/codes';

export type CodeInput = IdentifierInput & { id: string; code: string };

/** What the code path uses. */
export interface CodeStrategyDeps {
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  audit: AuditLog;
  challenges: ChallengeFlow;
  guesses: GuessBudgets;
  messages: MessageLimits;
  config: { signInCodes: { channels: string[]; withPassword: boolean } };
  /** SIGN_IN_LINKS on (and the hosted pages): each message carries the code's link too. */
  links?: SignInLinks;
}

/** What a send answers, the same for every address: the id to answer at, and the code's expiry. */
export interface SentCode {
  signInCodeId: string;
  codeExpiresAt: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Sign-in by a code sent to a verified identifier (POST /sign-ins/codes, then /sign-ins/codes/{id}):
 * the out-of-band challenge machinery of sign-up and recovery (features/challenges/) with a purpose
 * of its own, `sign_in`. A code is one factor: an identity holding a second factor gets a ticket.
 *
 * The send answers the same, in the same time, for an address that may sign in by code and for one
 * that may not (unknown, unverified, disabled, or holding a password when SIGN_IN_CODES_WITH_PASSWORD
 * is off): the same statements run, keyed to nobody, and a fresh id that names nothing is answered.
 * Every failure of the answer is the identical 401 identity.sign_in_refused.
 */
export class CodeStrategy implements Strategy<CodeInput> {
  constructor(private readonly deps: CodeStrategyDeps) {}

  /** The address, refused only for its shape or for a channel the configuration does not allow. */
  #address(input: IdentifierInput): NormalisedIdentifier {
    const address = this.deps.challenges.reachableAddress(input);
    if (!this.deps.config.signInCodes.channels.includes(address.type)) {
      throw new Problem('identity.identifier_channel_unavailable');
    }
    return address;
  }

  /**
   * POST /sign-ins/codes. Counted per client address and per destination (a window only these
   * sends spend) before anything about an account is read, known or not, in the transaction that
   * issues: past a limit the 429 rolls back and nothing is sent. A new code ends every earlier
   * live sign-in code of the identity. The message leaves after the answer.
   */
  async send(input: IdentifierInput, sender: MessageSubject): Promise<SentCode> {
    const ident = this.#address(input);
    const { db } = this.deps.database;
    const { withPassword } = this.deps.config.signInCodes;
    // Require SSO: by the domain alone, before anything is counted or read (docs/sso.md).
    await refuseAddressUnderSso(db, ident);
    const issued = await db.transaction().execute(async (trx) => {
      await this.deps.messages.count([sender, signInCodeDestinationSubject(ident)], trx);
      const identifier = await findIdentifier(trx, ident);
      // Locked, so of two sends for one identity (two of its addresses) the later revokes the
      // earlier's code: one live code at most. Keyed to nobody, the same statement locks nothing.
      const identity = await lockIdentity(trx, identifier?.identityId ?? NOBODY);
      const eligible =
        identifier?.verifiedAt &&
        identity &&
        maySignInByCode({ ...identity, hasPassword: identity.passwordHash !== null }, { withPassword })
          ? identifier
          : undefined;
      const now = this.deps.clock.now();
      // A new code ends the previous ones; keyed to nobody (matching no row) when nothing is issued.
      await revokeChallenges(trx, { identityId: eligible?.identityId ?? NOBODY, purpose: 'sign_in' }, now);
      const challenge = eligible
        ? await this.deps.challenges.issue(trx, {
            purpose: 'sign_in',
            identityId: eligible.identityId,
            identifierId: eligible.id,
          })
        : { id: randomUUID(), code: undefined, expiresAt: this.deps.challenges.expiryFromNow() };
      // Recorded either way (no address in the record), which also keeps the work alike.
      await this.deps.audit.append(trx, {
        name: 'identity.sign_in_code.requested',
        actor: null,
        target: eligible?.identityId ?? null,
        outcome: eligible ? 'success' : 'failure',
        details: { identifierType: ident.type, challengeId: eligible ? challenge.id : null },
      });
      return {
        ...challenge,
        sendTo: eligible ? { address: ident, identityId: eligible.identityId } : undefined,
      };
    });
    const { code, sendTo } = issued;
    if (sendTo && code) {
      const link = this.deps.links?.url(issued.id);
      setImmediate(() => {
        this.deps.challenges
          .deliver('sign_in', sendTo.address, code, { identityId: sendTo.identityId }, link)
          .catch((err: unknown) => {
            this.deps.log.error({ errClass: (err as Error)?.name }, 'sign-in code message failed');
          });
      });
    }
    return { signInCodeId: issued.id, codeExpiresAt: issued.expiresAt.toISOString() };
  }

  /**
   * POST /sign-ins/codes/{id}. Charged to the guess budget of the address (as every code: whether or
   * not an account holds it), then answered by the challenge flow: constant-time match, a miss
   * charges the identity's live sign-in codes and counts on its lock, a match is spent by
   * compare-and-set. The identity's epoch is read before the code is checked. A wrong, spent,
   * expired, replaced or exhausted code, an id of another address or of nothing, and an identity
   * disabled meanwhile all answer the identical 401 identity.sign_in_refused.
   */
  async signIn(input: CodeInput, meta: RequestMeta, complete: Complete): Promise<SignInResult> {
    const { db } = this.deps.database;
    const refusal = () => new Problem('identity.sign_in_refused');
    const ident = normaliseIdentifier(input);
    const allowed = ident !== null && this.deps.config.signInCodes.channels.includes(ident.type);
    const found = UUID.test(input.id) ? await findChallenge(db, input.id) : undefined;
    // The id's challenge counts only when it is a sign-in code sent to this very address.
    const identifier = ident ? await findIdentifier(db, ident) : undefined;
    const mine =
      allowed && found?.purpose === 'sign_in' && identifier && found.identifierId === identifier.id
        ? found
        : undefined;
    const identity = await findIdentity(db, mine?.identityId ?? NOBODY);
    const answer = await this.deps.challenges.answer({
      purpose: 'sign_in',
      owner: mine ? { identityId: mine.identityId } : undefined,
      identityId: mine?.identityId,
      budget: guessSubject.code('sign_in', ident?.value ?? input.identifier),
      code: input.code,
      route: LOCK_ROUTE,
      // Only the code of this id signs in (the newest: a new code ends the older ones).
      select: async (matches) => matches.find((c) => c.id === mine?.id),
      admit: async () => undefined,
    });
    const refused =
      !answer.ok ||
      !mine ||
      !identity ||
      !maySignInByCode(
        { ...identity, hasPassword: identity.passwordHash !== null },
        this.deps.config.signInCodes,
      );
    // A refusal is not written to the history: outside the miss's own transaction the write is a
    // commit of its own, which an id of nothing would not pay (timing/sign-in-code-answer.test.ts).
    if (refused) throw refusal();
    return complete(
      {
        identityId: mine.identityId,
        epoch: identity.sessionEpoch,
        method: 'code',
        // allowed: the channel is one SIGN_IN_CODES names, so the address was normalised.
        channel: ident!.type,
        stage: 'first',
      },
      meta,
    );
  }
}
