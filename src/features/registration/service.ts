import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { BreachCheck } from '../../platform/crypto/breached-passwords.js';
import { assertPasswordPolicy } from '../../platform/crypto/password-policy.js';
import type { PasswordHasher } from '../../platform/crypto/passwords.js';
import type { Database } from '../../platform/db/database.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import { Problem } from '../../platform/problem.js';
import type { MessageLimits, MessageSubject } from '../../platform/rate-limit/guess-budget.js';
import { destinationSubject, guessSubject } from '../../platform/rate-limit/guess-budget.js';
import type { Locale } from '../../shared/locales.js';
import { revokeChallenges } from '../challenges/repository.js';
import type { ChallengeFlow } from '../challenges/service.js';
import { identifierOwner } from '../challenges/service.js';
import type { Hooks } from '../events/hooks/service.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
import { type IdentifierInput, normaliseIdentifier } from '../identities/identifier.js';
import {
  claimIdentifier,
  deleteFreshIdentity,
  findIdentifier,
  insertIdentity,
  markIdentifierVerified,
  setPassword,
} from '../identities/repository.js';
import type { SignUpResult } from './schemas.js';

/** The route name the identity-wide lock records with each failure. */
const LOCK_ROUTE = 'sign-up-confirmation';

export interface SignUpInput extends IdentifierInput {
  password: string;
}

export interface ConfirmationInput extends IdentifierInput {
  password: string;
  code: string;
}

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
  /** The product's name (BRAND_NAME): a password built on it is weak. */
  config: { brand: { name: string } };
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
   * POST /sign-ups/confirmations. Every cause of failure ends in the same refusal, and each costs one
   * Argon2 verification (a real one, or a burn against the dummy hash), so neither the answer nor its
   * timing tells an unknown address from a wrong code or a wrong password.
   */
  async confirm(input: ConfirmationInput): Promise<void> {
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
        for (const candidate of matches) {
          if (await this.deps.passwords.verify(candidate.passwordHash!, input.password)) return candidate;
        }
        if (matches.length === 0) await this.deps.passwords.burn(input.password);
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
