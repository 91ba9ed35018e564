import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { BreachCheck } from '../../platform/crypto/breached-passwords.js';
import { assertPasswordPolicy } from '../../platform/crypto/password-policy.js';
import type { PasswordHasher } from '../../platform/crypto/passwords.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { RequestMeta } from '../../platform/http/auth.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import { Problem } from '../../platform/problem.js';
import type { MessageLimits, MessageSubject } from '../../platform/rate-limit/guess-budget.js';
import {
  destinationSubject,
  guessSubject,
  signInCodeDestinationSubject,
} from '../../platform/rate-limit/guess-budget.js';
import { isLocale, type Locale } from '../../shared/locales.js';
import { revokeChallenges } from '../challenges/repository.js';
import type { ChallengeFlow } from '../challenges/service.js';
import { identifierOwner } from '../challenges/service.js';
import type { Hooks } from '../events/hooks/service.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
import {
  type IdentifierInput,
  type NormalisedIdentifier,
  normaliseIdentifier,
} from '../identities/identifier.js';
import {
  claimAddressWithIdentity,
  claimIdentifier,
  deleteFreshIdentity,
  findIdentifier,
  findIdentity,
  insertIdentity,
  lockIdentity,
  markIdentifierVerified,
  setPassword,
} from '../identities/repository.js';
import { refuseAddressUnderSso } from '../organizations/sso-requirement/rule.js';
import { maySignInByCode } from '../sign-in/code-rule.js';
import type { Complete, SignInResult } from '../sign-in/strategy.js';
import type { SignUpResult } from './schemas.js';

/** The route name the identity-wide lock records with each failure. */
const LOCK_ROUTE = 'sign-up-confirmation';

export interface SignUpInput extends IdentifierInput {
  /** Omitted: a sign-up by code (SIGN_IN_CODES_SIGN_UP), an account without a password. */
  password?: string;
}

export interface ConfirmationInput extends IdentifierInput {
  /** Omitted: the confirmation of a sign-up by code, which opens a session. */
  password?: string;
  code: string;
}

/** The message a sign-up by code sends: a code to confirm, a code that signs in, or only a notice. */
type SignUpMessage = 'sign_up' | 'sign_in' | 'notice';

/** What registration uses. */
export interface RegistrationServiceDeps {
  database: Database;
  clock: Clock;
  passwords: PasswordHasher;
  /** The range API's breach check of a new password (BREACHED_PASSWORDS_RANGE_URL). */
  breaches: BreachCheck;
  audit: AuditLog;
  challenges: ChallengeFlow;
  messages: MessageLimits;
  /** The product's name (BRAND_NAME): a password built on it is weak; the sign-in-code settings. */
  config: {
    brand: { name: string };
    signInCodes: { channels: string[]; withPassword: boolean; signUp: boolean };
  };
  /** identity.created when a registration is confirmed (docs/events.md). */
  events: EventLog;
  /** before_identity_created, asked before the transaction (docs/events.md, "Synchronous hooks"). */
  hooks: Pick<Hooks, 'beforeIdentityCreated'>;
}

/** Registration: an identifier and a password, proven by a code sent to the identifier. */
export class RegistrationService {
  constructor(private readonly deps: RegistrationServiceDeps) {}

  /**
   * POST /sign-ups. Every refusal that needs no database (policy, normalisation, channel) comes
   * before the transaction, so a refused request writes nothing and sends nothing. `sender` is the
   * client address's subject (senderSubject): the code counts against it with its destination.
   */
  async signUp(input: SignUpInput, sender: MessageSubject, locale: Locale): Promise<SignUpResult> {
    // Require SSO: the organization's IdP makes these accounts (JIT), by the domain alone (docs/sso.md).
    await refuseAddressUnderSso(this.deps.database.db, normaliseIdentifier(input));
    if (input.password === undefined) return this.#signUpByCode(input, sender, locale);
    await assertPasswordPolicy(
      input.password,
      'password',
      [input.identifier, normaliseIdentifier(input)?.value ?? ''],
      this.deps.config.brand.name,
      this.deps.breaches,
    );
    const ident = this.deps.challenges.reachableAddress(input);
    await this.deps.hooks.beforeIdentityCreated({ via: 'sign_up', identifier: ident });
    // Shed before anything is written when the Argon2id queue is past its bound (503).
    this.deps.passwords.admit();

    // Argon2 runs before the transaction so no row lock is held during the hash.
    const passwordHash = await this.deps.passwords.hash(input.password);
    const now = this.deps.clock.now();

    const challenge = await this.deps.database.db.transaction().execute(async (trx) => {
      const newIdentityId = randomUUID();
      await insertIdentity(trx, { id: newIdentityId, createdAt: now, locale });
      let identityId: string = newIdentityId;
      let identifierId = await claimIdentifier(trx, {
        id: randomUUID(),
        identityId: newIdentityId,
        identifier: ident,
        now,
        verified: false,
      });
      if (!identifierId) {
        // Lost the claim (a repeat registration, or a concurrent one that committed first): the
        // address keeps its one identity, and this registration becomes another challenge on it.
        await deleteFreshIdentity(trx, newIdentityId);
        const existing = await findIdentifier(trx, ident);
        // The winner's row was removed between the conflict and this read: a rare race; the client
        // may retry, and nothing of this attempt is kept.
        if (!existing) throw new Problem('service.unavailable');
        if (existing.verifiedAt !== null) throw new Problem('identity.identifier_taken');
        identityId = existing.identityId;
        identifierId = existing.id;
      }
      // Every code sent counts against the client address's window and the destination's
      // (RATE_LIMIT_SENDS_A_MESSAGE per client address and route, and per destination), a new
      // address and a pending one alike. Counted here, in the transaction that sends, so only sends
      // count: the row lock of the client's window orders concurrent sign-ups, and past the limit
      // the 429 rolls this whole registration back (its counts included), so nothing is written or
      // sent. A verified address's 409 (above) sends nothing and spends nothing: it already says
      // the address is taken, and a stranger's 409s must not use up the owner's messages (a
      // new-sign-in notice among them) without a trace.
      await this.deps.messages.count([sender, destinationSubject(ident)], trx);
      // Earlier live challenges stay live (docs/api.md, "1. Sign up"): a stranger's registration
      // must not invalidate the owner's code in flight.
      const issued = await this.deps.challenges.issue(trx, {
        purpose: 'sign_up',
        identityId,
        identifierId,
        passwordHash,
      });
      // Last statement: the append holds the chain's head lock until commit.
      await this.deps.audit.append(trx, {
        name: 'identity.sign_up.requested',
        actor: null,
        target: identityId,
        outcome: 'success',
        details: { identifierType: ident.type, challengeId: issued.id },
      });
      return issued;
    });

    // After the commit: a failed delivery still leaves the registration in place (`NOT_DELIVERED`,
    // docs/api.md, "1. Sign up"), and a slow channel never holds a transaction open.
    const delivery = await this.deps.challenges.deliver('sign_up', ident, challenge.code!, { locale });

    return {
      identity: { identifierType: ident.type, identifier: maskIdentifier(ident.type, ident.value) },
      challengeDelivery: { status: delivery.status, resendable: delivery.resendable },
      challengeExpiresAt: challenge.expiresAt.toISOString(),
    };
  }

  /**
   * POST /sign-ups without a password (SIGN_IN_CODES_SIGN_UP=on; docs/api.md, "Sign up by code").
   * The answer is the same 201, with the same bytes apart from the expiry, for a new address, a
   * pending one and one already verified by its owner: no 409 here, so nobody learns who has an
   * account (docs/decisions.md, "Sign-up by code"). Every path runs the same statements (a fresh
   * identity claimed with the address or nothing written, the identifier read, the identity read, the counts, a challenge
   * written, the audit record) and awaits one real delivery: to a new or pending address the
   * sign-up code; to an owner who may sign in by code a code that signs in; to an owner who may
   * not (a password with SIGN_IN_CODES_WITH_PASSWORD=off, a disabled account) a notice without
   * a code, that an account already exists.
   */
  async #signUpByCode(input: IdentifierInput, sender: MessageSubject, locale: Locale): Promise<SignUpResult> {
    const ident = this.deps.challenges.reachableAddress(input);
    // Which channels may sign in by code is configuration, never the account: refused before anything.
    if (!this.deps.config.signInCodes.channels.includes(ident.type)) {
      throw new Problem('identity.identifier_channel_unavailable');
    }
    await this.deps.hooks.beforeIdentityCreated({ via: 'sign_up', identifier: ident });
    const now = this.deps.clock.now();
    const { withPassword } = this.deps.config.signInCodes;

    const issued = await this.deps.database.db.transaction().execute(async (trx) => {
      // One statement claims the address with a new identity, or writes nothing when a live row
      // holds it; then the address's row is read either way. Nothing is written and dropped on a
      // lost claim, so neither the answer nor its time tells a new address from an owner's.
      await claimAddressWithIdentity(trx, {
        identityId: randomUUID(),
        identifierId: randomUUID(),
        identifier: ident,
        now,
        locale,
      });
      const existing = await findIdentifier(trx, ident);
      // The winner's row was removed between the conflict and this read: a rare race; retry.
      if (!existing) throw new Problem('service.unavailable');
      const { identityId, id: identifierId } = existing;
      const verified = existing.verifiedAt !== null;
      const identity = await findIdentity(trx, identityId);
      const message: SignUpMessage = !verified
        ? 'sign_up'
        : identity &&
            maySignInByCode({ ...identity, hasPassword: identity.passwordHash !== null }, { withPassword })
          ? 'sign_in'
          : 'notice';
      // Counted for the client address and in the destination's sign-in-code window (the one
      // POST /sign-ins/codes spends), on every path alike, so a 429 tells no address from another;
      // never in the window the owner's step-up codes share, which a stranger must not spend.
      await this.deps.messages.count([sender, signInCodeDestinationSubject(ident)], trx);
      // A challenge without a password: only a confirmation without one answers it. Written for the
      // notice too (its code is never sent, so nobody can answer it), to keep the statements alike.
      const challenge = await this.deps.challenges.issue(trx, {
        purpose: 'sign_up',
        identityId,
        identifierId,
      });
      await this.deps.audit.append(trx, {
        name: 'identity.sign_up.requested',
        actor: null,
        target: identityId,
        outcome: 'success',
        details: { identifierType: ident.type, challengeId: challenge.id, passwordless: true, message },
      });
      // A new or pending address is written to in the request's language; an owner in their own.
      // Read in the same statement on every path (findIdentity), so no path costs one more.
      const to: Locale = verified && isLocale(identity?.locale) ? identity.locale : locale;
      return { ...challenge, message, locale: to };
    });

    // Awaited, as every sign-up's delivery is: its status is part of the answer, on every path.
    const delivery =
      issued.message === 'notice'
        ? await this.deps.challenges.notifyExistingAccount(ident, issued.locale)
        : await this.deps.challenges.deliver(issued.message, ident, issued.code!, { locale: issued.locale });
    return {
      identity: { identifierType: ident.type, identifier: maskIdentifier(ident.type, ident.value) },
      challengeDelivery: { status: delivery.status, resendable: delivery.resendable },
      challengeExpiresAt: issued.expiresAt.toISOString(),
    };
  }

  /**
   * POST /sign-ups/confirmations without a password: the code of a sign-up by code opens a session
   * (or a second-factor ticket, for an owner who holds one). Charged to the address's sign-in-code
   * guess budget, the one POST /sign-ins/codes/{id} spends, so the two ways to answer a code that
   * signs in share one bound (docs/security.md, "Sign-in codes"). Only a challenge written without a
   * password matches: the code of a registration with a password never confirms without it. Every
   * failure is the identical 422 identity.verification_refused, with no Argon2 on any path.
   */
  async confirmByCode(
    input: ConfirmationInput,
    meta: RequestMeta,
    complete: Complete,
  ): Promise<SignInResult> {
    const refusal = () => new Problem('identity.verification_refused');
    const ident = normaliseIdentifier(input);
    if (!ident) throw new Problem('identity.identifier_unusable');
    const allowed =
      this.deps.config.signInCodes.signUp && this.deps.config.signInCodes.channels.includes(ident.type);
    const identifier = allowed ? await findIdentifier(this.deps.database.db, ident) : undefined;
    const answer = await this.deps.challenges.answer({
      purpose: 'sign_up',
      ...identifierOwner(identifier),
      budget: guessSubject.code('sign_in', ident.value),
      code: input.code,
      route: LOCK_ROUTE,
      select: async (matches) => matches.find((c) => c.passwordHash === null),
      // The lock is never consulted here either: a correct code on a locked account still confirms.
      admit: (trx, challenge, now) => this.#admitByCode(trx, challenge, ident, now),
    });
    if (!answer.ok) throw refusal();
    const { identityId, epoch } = answer.value;
    return complete(
      {
        identityId,
        epoch,
        method: 'code',
        channel: ident.type,
        stage: 'first',
        refusal: 'identity.verification_refused',
      },
      meta,
    );
  }

  /**
   * In the transaction that spent the code: a pending address becomes verified and its identity
   * exists from here, without a password; an owner's verified address signs its owner in, when the
   * owner may sign in by code now. The identity row is locked first, as every write to its methods.
   */
  async #admitByCode(
    trx: Executor,
    challenge: { id: string; identityId: string; identifierId: string | null },
    ident: NormalisedIdentifier,
    now: Date,
  ): Promise<{ identityId: string; epoch: number }> {
    const { identityId, identifierId } = challenge;
    const identity = await lockIdentity(trx, identityId);
    if (!identity || !identifierId) throw new Problem('identity.verification_refused');
    if (await markIdentifierVerified(trx, identifierId, now)) {
      // A registration's identity (features/registration): nothing but this address, no password.
      // Once one registration is confirmed, nobody else's pending password can claim it.
      await revokeChallenges(trx, { identifierId, purpose: 'sign_up', exceptId: challenge.id }, now);
      await identityChanged(this.deps.events, trx, 'identity.created', identityId, identityId, {
        via: 'sign_up_code',
      });
      await this.deps.audit.appendOwn(trx, 'identity.identifier.verified', identityId, {
        identifierType: ident.type,
        identifierId,
        via: 'sign_up_code',
      });
    } else {
      // Verified already: the owner's own address. Signs in only as POST /sign-ins/codes would.
      const identifier = await findIdentifier(trx, ident);
      if (
        identifier?.id !== identifierId ||
        identifier.verifiedAt === null ||
        !maySignInByCode(
          { ...identity, hasPassword: identity.passwordHash !== null },
          this.deps.config.signInCodes,
        )
      ) {
        throw new Problem('identity.verification_refused');
      }
    }
    return { identityId, epoch: identity.sessionEpoch };
  }

  /**
   * POST /sign-ups/confirmations. Every cause of failure ends in the same refusal, and each costs one
   * Argon2 verification (a real one, or a burn against the dummy hash), so neither the answer nor its
   * timing tells an unknown address from a wrong code or a wrong password.
   */
  async confirm(input: ConfirmationInput & { password: string }): Promise<void> {
    const { password } = input;
    const ident = normaliseIdentifier(input);
    if (!ident) throw new Problem('identity.identifier_unusable');
    // Shed before anything is written when the Argon2id queue is past its bound (503).
    this.deps.passwords.admit();

    // Read outside a transaction: the Argon2 work below must not run while holding row locks.
    const identifier = await findIdentifier(this.deps.database.db, ident);
    const answer = await this.deps.challenges.answer({
      purpose: 'sign_up',
      ...identifierOwner(identifier),
      budget: guessSubject.code('sign_up', ident.value),
      code: input.code,
      route: LOCK_ROUTE,
      // Two registrations can draw the same code, so each match is tried with the password until
      // one verifies; with no match the password is verified against the dummy hash all the same.
      select: async (matches) => {
        // A sign-up by code's challenge has no password: it never confirms a password's registration.
        const withPassword = matches.filter((c) => c.passwordHash !== null);
        for (const candidate of withPassword) {
          if (await this.deps.passwords.verify(candidate.passwordHash!, password)) return candidate;
        }
        if (withPassword.length === 0) await this.deps.passwords.burn(password);
        return undefined;
      },
      // The lock is never consulted here: a correct code on a locked account still confirms.
      admit: async (trx, challenge, now) => {
        const { identifierId, identityId } = challenge;
        if (!identifierId || !(await markIdentifierVerified(trx, identifierId, now))) {
          throw new Problem('identity.verification_refused');
        }
        // The identity's password becomes the password of the challenge that confirmed
        // (docs/decisions.md, "Identifiers, codes and passwords", Registration). It only ever fills
        // a pending identity's empty password; an established account's password is never replaced
        // through a sign-up challenge.
        if (!(await setPassword(trx, identityId, challenge.passwordHash!, now, { onlyIfUnset: true }))) {
          throw new Problem('identity.verification_refused');
        }
        // Once one registration is confirmed, nobody else's pending password can claim it
        // (docs/api.md, "1. Sign up").
        await revokeChallenges(trx, { identifierId, purpose: 'sign_up', exceptId: challenge.id }, now);
        // The identity exists for an application from here: a registration never confirmed is
        // no account (docs/decisions.md, "Events: identity.created at confirmation").
        await identityChanged(this.deps.events, trx, 'identity.created', identityId, identityId, {
          via: 'sign_up',
        });
        await this.deps.audit.appendOwn(trx, 'identity.identifier.verified', identityId, {
          identifierType: ident.type,
          identifierId,
          via: 'sign_up',
        });
      },
    });
    // Locked or not, a failure is the same 422: the lock only stops guessing.
    if (!answer.ok) throw new Problem('identity.verification_refused');
  }
}
