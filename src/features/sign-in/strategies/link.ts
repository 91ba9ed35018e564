import type { Clock } from '../../../platform/clock.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { maskIdentifier } from '../../../platform/notify/mask.js';
import { Problem } from '../../../platform/problem.js';
import {
  findChallenge,
  findLiveSignInCode,
  type LiveSignInCode,
  spendChallengeByLink,
} from '../../challenges/repository.js';
import { maySignInByCode } from '../code-rule.js';
import type { SignInLinks } from '../links.js';
import type { Complete, ProvenIdentity, SignInResult } from '../strategy.js';

/** What a link carries: the sign-in code's id and the link's token. */
export interface LinkInput {
  signInCodeId: string;
  token: string;
}

/** What the link's page shows before anyone presses Continue. */
export interface LinkLookup {
  identifierType: 'email' | 'phone';
  maskedIdentifier: string;
  sameBrowser: boolean;
  codeExpiresAt: string;
}

/** Where a sign-in code stands, as the browser that asked for it may learn. */
export type CodeStatus = 'pending' | 'completed' | 'completed_elsewhere';

export interface LinkStrategyDeps {
  database: Database;
  clock: Clock;
  config: { signInCodes: { channels: string[]; withPassword: boolean } };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Sign-in by a code's link (SIGN_IN_LINKS; docs/security.md, "Sign-in links"). The link is the same
 * challenge as the code, in another form: one use between them, ended by a newer code, by expiry
 * and by five wrong codes alike.
 *
 * - Opening the link signs nobody in: the page asks POST /sign-ins/links/lookups (no write) and
 *   shows "Continue as <masked address>"; only POST /sign-ins/links, the press of that button,
 *   spends the challenge. A mail scanner that follows every link spends nothing.
 * - The session goes to the browser that pressed Continue. When it is not the browser that asked
 *   for the code (its cookie is missing), the page says so before the press, and the asking tab
 *   learns afterwards (GET /sign-ins/codes/{id}/status) that the sign-in finished elsewhere: it
 *   never receives a session from a link (an attacker who asks for a code to a victim's address
 *   gets nothing when the victim follows the link).
 *
 * Every failure (a token that is not the id's, a code spent, replaced, expired or exhausted, an
 * identity that may no longer sign in by code) is the identical 401 identity.sign_in_refused. The
 * token is 256 bits: nothing here is a guess worth budgeting.
 */
export class LinkStrategy {
  constructor(
    private readonly deps: LinkStrategyDeps,
    private readonly links: SignInLinks,
  ) {}

  /** The live challenge the link names, when the identity may still sign in by code. */
  async #live(input: LinkInput): Promise<LiveSignInCode> {
    const { signInCodeId: id, token } = input;
    const found =
      UUID.test(id) && this.links.holds(id, token)
        ? await findLiveSignInCode(this.deps.database.db, id, this.deps.clock.now())
        : undefined;
    const { signInCodes } = this.deps.config;
    if (
      !found ||
      // A channel SIGN_IN_CODES no longer names signs in by neither its code nor its link.
      !signInCodes.channels.includes(found.identifierType) ||
      !maySignInByCode({ ...found, hasPassword: found.passwordHash !== null }, signInCodes)
    ) {
      throw new Problem('identity.sign_in_refused');
    }
    return found;
  }

  /** POST /sign-ins/links/lookups: what the link's page shows; reads only. */
  async lookUp(input: LinkInput, cookieHeader: string | undefined): Promise<LinkLookup> {
    const found = await this.#live(input);
    return {
      identifierType: found.identifierType,
      maskedIdentifier: maskIdentifier(found.identifierType, found.identifierValue),
      sameBrowser: this.links.startedHere(cookieHeader, found.id),
      codeExpiresAt: new Date(found.expiresAt).toISOString(),
    };
  }

  /**
   * POST /sign-ins/links: the press of Continue. The before_sign_in hook is asked first, outside
   * any transaction; then the challenge is spent by compare-and-set in the transaction that opens
   * the session (or issues the second-factor ticket), so of a link and its code answered together
   * exactly one signs in, and a refused completion leaves the code unspent.
   */
  async signIn(
    input: LinkInput,
    cookieHeader: string | undefined,
    meta: RequestMeta,
    complete: Complete,
  ): Promise<SignInResult> {
    const found = await this.#live(input);
    const browser = this.links.startedHere(cookieHeader, found.id) ? 'same' : 'other';
    const proven: ProvenIdentity = {
      identityId: found.identityId,
      epoch: found.sessionEpoch,
      method: 'code',
      channel: found.identifierType,
      stage: 'first',
    };
    await complete.admit(proven, meta);
    const { db } = this.deps.database;
    return db.transaction().execute(async (trx) => {
      if (!(await spendChallengeByLink(trx, found.id, browser, this.deps.clock.now()))) {
        throw new Problem('identity.sign_in_refused');
      }
      return complete({ ...proven, admitted: true }, meta, trx);
    });
  }

  /**
   * GET /sign-ins/codes/{id}/status, for the browser that asked for the code only (its cookie):
   * 'completed' once the code or the link in this browser signed in, 'completed_elsewhere' once the
   * link signed in another browser, else 'pending' (an expired, replaced or exhausted code too, and
   * an id that names nothing: the asking page keeps its own clock, and the answer tells nobody
   * whether an account holds the address).
   */
  async status(id: string, cookieHeader: string | undefined): Promise<CodeStatus> {
    if (!UUID.test(id) || !this.links.startedHere(cookieHeader, id)) {
      throw new Problem('identity.sign_in_refused');
    }
    const challenge = await findChallenge(this.deps.database.db, id);
    if (challenge?.purpose !== 'sign_in' || challenge.spentAt === null) return 'pending';
    return challenge.linkBrowser === 'other' ? 'completed_elsewhere' : 'completed';
  }
}
