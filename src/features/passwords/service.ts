import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { BreachCheck } from '../../platform/crypto/breached-passwords.js';
import { assertPasswordPolicy } from '../../platform/crypto/password-policy.js';
import type { PasswordHasher } from '../../platform/crypto/passwords.js';
import type { Database } from '../../platform/db/database.js';
import type { SessionPrincipal } from '../../platform/http/auth.js';
import type { Signals } from '../../platform/metrics/signals.js';
import { Problem } from '../../platform/problem.js';
import type { GuessBudgets, MessageLimits, MessageSubject } from '../../platform/rate-limit/guess-budget.js';
import { guessSubject, recoveryDestinationSubject } from '../../platform/rate-limit/guess-budget.js';
import { revokeChallenges } from '../challenges/repository.js';
import type { ChallengeFlow } from '../challenges/service.js';
import { identifierOwner } from '../challenges/service.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
import { type IdentifierInput, normaliseIdentifier } from '../identities/identifier.js';
import type { AccountLock } from '../identities/lock.js';
import {
  bumpSessionEpoch,
  findIdentifier,
  findIdentity,
  lockIdentity,
  setPassword,
  verifiedIdentifiers,
} from '../identities/repository.js';
import { refuseAddressUnderSso } from '../organizations/sso-requirement/rule.js';
import { sessionsEnded } from '../sessions/events.js';
import { revokeIdentitySessions } from '../sessions/repository.js';
import { endOtherSessions, lockCallerSession } from '../sessions/revocations.js';

const LOCK_ROUTE = 'password-recovery-confirmation';
const CHANGE_ROUTE = 'password-changes';

/** What password changes and resets use. */
export interface PasswordServiceDeps {
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  passwords: PasswordHasher;
  /** The range API's breach check of a new password (BREACHED_PASSWORDS_RANGE_URL). */
  breaches: BreachCheck;
  audit: AuditLog;
  lock: AccountLock;
  challenges: ChallengeFlow;
  guesses: GuessBudgets;
  messages: MessageLimits;
  signals: Signals;
  /** identity.password_changed and the session.ended of the sessions a change ends (docs/events.md). */
  events: EventLog;
  /** The product's name (BRAND_NAME): a password built on it is weak. */
  config: { brand: { name: string } };
}

export class PasswordService {
  constructor(private readonly deps: PasswordServiceDeps) {}

  /**
   * POST /password-changes. A wrong current password, an identity without a password and a
   * password changed meanwhile all answer the same 422. Every attempt is charged to the identity's
   * current-password budget first, and a wrong one counts on the identity-wide lock. Success ends
   * every other session: the epoch moves on (sign-ins still verifying the old password are dead on
   * arrival) and the caller's session alone is moved to the new epoch.
   */
  async change(
    principal: SessionPrincipal,
    input: { currentPassword: string; newPassword: string },
  ): Promise<void> {
    const { identityId, sessionId } = principal;
    const { db } = this.deps.database;
    await this.#assertNewPassword(identityId, input.newPassword);
    // Shed before anything is written when the Argon2id queue is past its bound (503).
    this.deps.passwords.admit();
    const refusal = () => new Problem('identity.password_change_refused');
    const budget = guessSubject.currentPassword(identityId);
    // Before the password is looked at: past the free failures an early attempt is 429, right or
    // wrong, unchecked, so a stolen access token is no password oracle (docs/security.md).
    await this.deps.guesses.admit(budget);
    // Argon2 runs outside the transaction; the row is re-checked under its lock below.
    const identity = await findIdentity(db, identityId);
    const verifiedHash = identity?.passwordHash ?? null;
    const ok = verifiedHash
      ? await this.deps.passwords.verify(verifiedHash, input.currentPassword)
      : await this.deps.passwords.burn(input.currentPassword);
    if (!ok) {
      // A wrong current password is a failed guess like any other: it counts on the identity-wide
      // lock too (which keeps this route's own 422; the lock never refuses a correct secret).
      await db.transaction().execute((trx) => this.deps.lock.recordFailure(trx, identityId, CHANGE_ROUTE));
      throw refusal();
    }
    const newHash = await this.deps.passwords.hash(input.newPassword);
    const now = this.deps.clock.now();
    const ended = await db.transaction().execute(async (trx) => {
      const locked = await lockIdentity(trx, identityId);
      // Changed or removed since it was verified: the proof no longer holds.
      if (!locked || locked.passwordHash !== verifiedHash) throw refusal();
      await lockCallerSession(trx, locked, sessionId);
      await setPassword(trx, identityId, newHash, now);
      const ended = await endOtherSessions(trx, principal, 'password_changed', now);
      // The other sessions (a thief's among them) are gone: the step-up budget starts afresh, and
      // the current password was proven.
      await this.deps.guesses.forgive(trx, guessSubject.session(identityId));
      await this.deps.guesses.forgive(trx, budget);
      const { events } = this.deps;
      await sessionsEnded(events, trx, identityId, identityId, ended.live, 'password_changed');
      await identityChanged(events, trx, 'identity.password_changed', identityId, identityId, {
        via: 'change',
      });
      await this.deps.audit.appendOwn(trx, 'identity.password.changed', identityId, {
        sessionsEnded: ended.count,
      });
      return ended.count;
    });
    this.deps.signals.sessionsRevoked('password_changed', ended);
  }

  /**
   * The policy a signed-in person's new password meets (a change, a first password): strength,
   * not built on the caller's own addresses or the product's name, not known from breaches.
   */
  async #assertNewPassword(identityId: string, newPassword: string): Promise<void> {
    // The caller's own addresses are the personal data a new password must not be built on.
    const own = await verifiedIdentifiers(this.deps.database.db, identityId);
    await assertPasswordPolicy(
      newPassword,
      'newPassword',
      own.map((i) => i.value),
      this.deps.config.brand.name,
      this.deps.breaches,
    );
  }

  /**
   * POST /sign-in-methods/passwords: a first password for an identity that has none (a sign-up by
   * code, a provider sign-up). The elevation stands in for the current password: the person proved
   * a factor moments ago, in this session. Set only while none is set (compare-and-set under the
   * identity's row lock), so two additions racing leave one password and the other is 409. Other
   * sessions go on: nothing was revoked, a way in was added (docs/decisions.md, "Sign-up by code").
   */
  async add(principal: SessionPrincipal, input: { newPassword: string }): Promise<void> {
    const { identityId } = principal;
    const { db } = this.deps.database;
    await this.#assertNewPassword(identityId, input.newPassword);
    // Refused before Argon2 when one is set already; re-checked under the lock below.
    if ((await findIdentity(db, identityId))?.passwordHash) throw new Problem('identity.password_exists');
    this.deps.passwords.admit();
    const newHash = await this.deps.passwords.hash(input.newPassword);
    const now = this.deps.clock.now();
    await db.transaction().execute(async (trx) => {
      await lockIdentity(trx, identityId);
      if (!(await setPassword(trx, identityId, newHash, now, { onlyIfUnset: true }))) {
        throw new Problem('identity.password_exists');
      }
      await identityChanged(this.deps.events, trx, 'identity.password_changed', identityId, identityId, {
        via: 'added',
      });
      await this.deps.audit.appendOwn(trx, 'identity.password.added', identityId, {});
    });
  }

  /**
   * POST /password-recoveries. The answer is the same whether or not the address belongs to an
   * account: one transaction always writes an audit record (a challenge row too for a verified
   * address), and the message leaves after the answer, so a slow channel cannot be timed.
   * `sender` is the client address's subject (senderSubject).
   */
  async start(input: IdentifierInput, sender: MessageSubject): Promise<{ challengeExpiresAt: string }> {
    // Both refusals depend on the address's shape and the configuration only, never on an account.
    const ident = this.deps.challenges.reachableAddress(input);
    const { db } = this.deps.database;
    // Require SSO: the IdP holds these people's credentials; no recovery, by the domain alone.
    await refuseAddressUnderSso(db, ident);
    const issued = await db.transaction().execute(async (trx) => {
      // Counted per client address and per destination before anything about an account is read,
      // by the same statements for a known and an unknown address, in a destination window that
      // only recovery starts spend: the limits trip at the same count for both and cost the same
      // time, so neither the 429 nor the answer's time tells them apart. Counted in this transaction, so only a start that answers 201 counts (a refused one
      // sends nothing and spends nothing), and the client's window's row lock orders concurrent
      // starts. Past a limit the 429 rolls everything back and nothing is sent.
      await this.deps.messages.count([sender, recoveryDestinationSubject(ident)], trx);
      const identifier = await findIdentifier(trx, ident);
      const known = identifier?.verifiedAt ? identifier : undefined;
      // An unknown address gets no challenge; the answer promises the same expiry either way.
      const challenge = known
        ? await this.deps.challenges.issue(trx, {
            purpose: 'password_recovery',
            identityId: known.identityId,
            identifierId: known.id,
          })
        : { id: null, code: undefined, expiresAt: this.deps.challenges.expiryFromNow() };
      // Recorded either way (no address in the record), which also keeps the work alike.
      await this.deps.audit.append(trx, {
        name: 'identity.password_recovery.requested',
        actor: null,
        target: known?.identityId ?? null,
        outcome: known ? 'success' : 'failure',
        details: { identifierType: ident.type, challengeId: challenge.id },
      });
      return { ...challenge, known };
    });
    const { code, known } = issued;
    if (known && code) {
      // After the answer is on its way; the notifier reports failures as results and logs them.
      setImmediate(() => {
        this.deps.challenges
          .deliver('password_recovery', ident, code, { identityId: known.identityId })
          .catch((err: unknown) => {
            this.deps.log.error({ errClass: (err as Error)?.name }, 'recovery message failed');
          });
      });
    }
    return { challengeExpiresAt: issued.expiresAt.toISOString() };
  }

  /**
   * POST /password-recoveries/confirmations. Every failure (unusable or unknown address, wrong,
   * spent, expired or exhausted code, lost race) answers the same 422. A wrong code counts toward
   * the identity-wide lock like other codes; the lock never stops a correct code. Success sets the
   * password and ends every session of the identity, with no exception.
   */
  async confirm(input: IdentifierInput & { code: string; newPassword: string }): Promise<void> {
    // The address as given and as normalised, never what an account holds: the refusal reveals nothing.
    await assertPasswordPolicy(
      input.newPassword,
      'newPassword',
      [input.identifier, normaliseIdentifier(input)?.value ?? ''],
      this.deps.config.brand.name,
      this.deps.breaches,
    );
    // Shed before anything is written when the Argon2id queue is past its bound (503).
    this.deps.passwords.admit();
    const refusal = () => new Problem('identity.password_recovery_refused');
    const ident = normaliseIdentifier(input);
    const identifier = ident ? await findIdentifier(this.deps.database.db, ident) : undefined;
    const known = identifier?.verifiedAt ? identifier : undefined;
    let newHash = '';
    const answer = await this.deps.challenges.answer({
      purpose: 'password_recovery',
      ...identifierOwner(known),
      // Charged per address whether or not an account holds it, so the answer stays the same.
      budget: ident ? guessSubject.code('password_recovery', ident.value) : undefined,
      code: input.code,
      route: LOCK_ROUTE,
      // Hashed before the transaction, so no row lock is held during Argon2.
      select: async ([first]) => {
        if (first) newHash = await this.deps.passwords.hash(input.newPassword);
        return first;
      },
      admit: async (trx, challenge, now) => {
        const identityId = challenge.identityId;
        await lockIdentity(trx, identityId);
        await setPassword(trx, identityId, newHash, now);
        await bumpSessionEpoch(trx, identityId);
        const ended = await revokeIdentitySessions(trx, identityId, 'password_recovered', now);
        await this.deps.guesses.forgive(trx, guessSubject.session(identityId));
        // After a recovery, every other recovery code of the identity is dead.
        await revokeChallenges(trx, { identityId, purpose: 'password_recovery' }, now);
        // The person who holds the address's code acts: the identity is the actor.
        const { events } = this.deps;
        await sessionsEnded(events, trx, identityId, identityId, ended.live, 'password_recovered');
        await identityChanged(events, trx, 'identity.password_changed', identityId, identityId, {
          via: 'recovery',
        });
        await this.deps.audit.appendOwn(trx, 'identity.password.recovered', identityId, {
          identifierType: known?.type ?? null,
          sessionsEnded: ended.count,
        });
        return ended.count;
      },
    });
    if (!answer.ok) throw refusal();
    this.deps.signals.sessionsRevoked('password_recovered', answer.value);
  }
}
