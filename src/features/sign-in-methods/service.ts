import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { SessionPrincipal } from '../../platform/http/auth.js';
import type { Signals } from '../../platform/metrics/signals.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../platform/pagination/page.js';
import { Problem } from '../../platform/problem.js';
import type { MessageLimits, MessageSubject } from '../../platform/rate-limit/guess-budget.js';
import { destinationSubject, guessSubject } from '../../platform/rate-limit/guess-budget.js';
import { type ChallengeRow, revokeChallenges } from '../challenges/repository.js';
import type { ChallengeFlow } from '../challenges/service.js';
import { identityChanged } from '../identities/events.js';
import type { IdentifierInput, IdentifierType } from '../identities/identifier.js';
import type { AccountLock } from '../identities/lock.js';
import {
  claimIdentifier,
  findIdentifier,
  lockIdentity,
  markIdentifierVerified,
  removeIdentifier,
  removePassword,
  verifiedIdentifiers,
} from '../identities/repository.js';
import { clearActiveRequiringSecondFactor } from '../organizations/repository.js';
import { domainRequiresSso, lockSsoDomains } from '../organizations/sso-requirement/repository.js';
import { emailDomain, SSO_REQUIRED_REASON } from '../organizations/sso-requirement/sweep.js';
import { passkeyChanged } from '../passkeys/events.js';
import { livePasskeys, removePasskey } from '../passkeys/repository.js';
import { liveLinks, removeLink } from '../providers/repository.js';
import { type ProviderInput, ProviderService, type ProviderServiceDeps } from '../providers/service.js';
import type { ProviderVerifier } from '../providers/verifier.js';
import { sessionsEnded } from '../sessions/events.js';
import { endOtherSessions, lockCallerSession } from '../sessions/revocations.js';
import { endSessionsUnderSso } from '../sessions/sso-required.js';
import { passwordMethodId } from './password-method.js';
import { methodsPage } from './repository.js';

const LOCK_ROUTE = 'sign-in-method-confirmation';

type AddMethodInput =
  | (IdentifierInput & { identifierType: IdentifierType })
  | ({ identifierType: 'provider' } & ProviderInput);

/** What listing, adding and removing sign-in methods use (and the provider acts it hands on). */
export interface SignInMethodServiceDeps extends ProviderServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  lock: AccountLock;
  challenges: ChallengeFlow;
  messages: MessageLimits;
  cursors: CursorCodec;
  providers: ProviderVerifier;
  signals: Signals;
  config: Pick<Config, 'lifetimes' | 'webauthn' | 'signInCodes'>;
}

export class SignInMethodService {
  readonly #providers: ProviderService;

  constructor(private readonly deps: SignInMethodServiceDeps) {
    this.#providers = new ProviderService(deps);
  }

  async list(scope: CursorScope, query: PageQuery) {
    const identityId = scope.subject;
    const fetch = (window: KeysetWindow) => methodsPage(this.deps.database.db, identityId, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.verifiedAt);
    return {
      items: items.map((r) => ({
        id: r.id,
        kind: r.kind,
        display:
          r.kind === 'email' || r.kind === 'phone'
            ? maskIdentifier(r.kind, r.detail as string)
            : r.kind === 'provider' || r.kind === 'passkey'
              ? r.detail
              : null,
        verifiedAt: new Date(r.verifiedAt).toISOString(),
        lastUsedAt: r.lastUsedAt ? new Date(r.lastUsedAt).toISOString() : null,
      })),
      pageInfo,
    };
  }

  /** POST /sign-in-methods. */
  async add(principal: SessionPrincipal, input: AddMethodInput, sender: MessageSubject) {
    if (input.identifierType === 'provider') {
      // A refused ID token is a refused proof of the new method: the confirmation refusal.
      return this.#providers.link(
        principal.identityId,
        { provider: input.provider, idToken: input.idToken },
        'identity.sign_in_method_confirmation_refused',
      );
    }
    return this.addIdentifier(principal.identityId, input, sender);
  }

  /**
   * The identifier form: a code goes to the address; nothing is attached to the identity until
   * the code comes back. An address verified by anyone (the caller included) is 409. An address
   * held only by someone else's unconfirmed registration is not: proving the code claims it.
   * `sender` is the client address's subject (senderSubject).
   */
  private async addIdentifier(identityId: string, input: IdentifierInput, sender: MessageSubject) {
    const ident = this.deps.challenges.reachableAddress(input);
    const { db } = this.deps.database;
    const existing = await findIdentifier(db, ident);
    if (existing?.verifiedAt) throw new Problem('identity.identifier_taken');

    const challenge = await db.transaction().execute(async (trx) => {
      // The code counts against the client address's window and the destination's like every
      // message (RATE_LIMIT_SENDS_A_MESSAGE), in the transaction that sends it: a 409 above or any
      // other refusal sends nothing and counts nothing, as at sign-up, and a 429 here rolls the
      // counts back with the rest.
      await this.deps.messages.count([sender, destinationSubject(ident)], trx);
      const issued = await this.deps.challenges.issue(trx, {
        purpose: 'sign_in_method',
        identityId,
        address: ident,
      });
      await this.deps.audit.appendOwn(trx, 'identity.sign_in_method.requested', identityId, {
        kind: ident.type,
        challengeId: issued.id,
      });
      return issued;
    });
    // After the commit, so a slow channel never holds a transaction open.
    const delivery = await this.deps.challenges.deliver('sign_in_method', ident, challenge.code!, {
      identityId,
    });
    return {
      challengeExpiresAt: challenge.expiresAt.toISOString(),
      challengeDelivery: { status: delivery.status, resendable: delivery.resendable },
    };
  }

  /**
   * POST /sign-in-methods/confirmations. The code is compared with every live challenge of the
   * caller's own identity (constant time, no early exit), so another identity's code, a spent one
   * and a wrong one all miss alike. A miss charges every live challenge once and the lock once;
   * the lock is consulted only to word the refusal, never before a correct code is admitted.
   */
  async confirm(principal: SessionPrincipal, code: string): Promise<void> {
    const { identityId } = principal;
    const answer = await this.deps.challenges.answer({
      purpose: 'sign_in_method',
      owner: { identityId },
      identityId,
      budget: guessSubject.session(principal.identityId),
      code,
      route: LOCK_ROUTE,
      countWithoutLiveChallenge: true,
      admit: (trx, challenge, now) => this.admit(trx, identityId, challenge, now),
    });
    if (answer.ok) {
      if (answer.value.status === 'taken') throw new Problem('identity.identifier_taken');
      if (answer.value.ended > 0) this.deps.signals.sessionsRevoked(SSO_REQUIRED_REASON, answer.value.ended);
      return;
    }
    // The failure that trips the lock is still the ordinary refusal; a wrong code on an account
    // that was already locked (here or on any other code-answering route) is the locked one.
    throw new Problem(
      answer.failure?.wasLocked
        ? 'identity.sign_in_method_locked'
        : 'identity.sign_in_method_confirmation_refused',
    );
  }

  /**
   * In the transaction that spent the challenge: the address becomes a verified identifier. An
   * email in a domain whose organization requires SSO ends every session of the identity, the
   * caller's included, through the one revocation (docs/sso.md, "Require SSO"); the domain's lock
   * comes first, before any row of the identity, so a requirement turned on or a domain verified
   * at the same moment either reads this address or is read by it.
   */
  private async admit(
    trx: Executor,
    identityId: string,
    challenge: ChallengeRow,
    now: Date,
  ): Promise<{ status: 'verified' | 'taken'; ended: number }> {
    const ident = { type: challenge.identifierType!, value: challenge.identifierValue! };
    const domain = ident.type === 'email' ? emailDomain(ident.value) : null;
    if (domain !== null) await lockSsoDomains(trx, [domain]);
    const existing = await findIdentifier(trx, ident);
    let identifierId: string | undefined;
    if (existing?.verifiedAt) return { status: 'taken', ended: 0 };
    if (existing && existing.identityId === identityId) {
      identifierId = (await markIdentifierVerified(trx, existing.id, now, identityId))
        ? existing.id
        : undefined;
    } else {
      // Someone else's registration that was never confirmed yields to the proven owner; its
      // live codes die with it.
      if (existing && (await removeIdentifier(trx, existing.id, now, { pendingOnly: true }))) {
        await revokeChallenges(trx, { identifierId: existing.id }, now);
      }
      identifierId = await claimIdentifier(trx, {
        id: randomUUID(),
        identityId,
        identifier: ident,
        now,
        verified: true,
      });
    }
    if (!identifierId) return { status: 'taken', ended: 0 };
    // Once an address is added, the identity's other pending challenges for it are moot.
    await revokeChallenges(trx, { identityId, purpose: 'sign_in_method', address: ident }, now);
    // A correct code clears the lock (docs/api.md, "4.1 Add an address"), even when it was locked.
    await this.deps.lock.clear(trx, identityId);
    const swept =
      domain !== null && (await domainRequiresSso(trx, domain))
        ? await endSessionsUnderSso(trx, this.deps.events, identityId, [identityId], now)
        : null;
    await identityChanged(this.deps.events, trx, 'identity.updated', identityId, identityId);
    await this.deps.audit.appendOwn(trx, 'identity.sign_in_method.verified', identityId, {
      kind: ident.type,
      methodId: identifierId,
      ...(swept ? { ssoRequired: true, sessionsEnded: swept.sessions } : {}),
    });
    return { status: 'verified', ended: swept?.sessions ?? 0 };
  }

  /**
   * POST /sign-in-methods/{id}/removals. The identity row is locked first and the ways in are
   * counted after the lock, so concurrent removals of different methods serialise and the last way
   * in always remains. The removal moves the session epoch on (sign-ins in flight are dead on
   * arrival, every other session ends); the caller's own session moves to the new epoch and stays.
   */
  async remove(principal: SessionPrincipal, methodId: string): Promise<void> {
    const { identityId, sessionId } = principal;
    const now = this.deps.clock.now();
    const enabled = this.deps.providers.names;
    const ended = await this.deps.database.db.transaction().execute(async (trx) => {
      const identity = await lockIdentity(trx, identityId);
      await lockCallerSession(trx, identity, sessionId);
      const identifiers = await verifiedIdentifiers(trx, identityId);
      const links = await liveLinks(trx, identityId);
      const passkeys = await livePasskeys(trx, identityId);
      const hasPassword = identity!.passwordHash !== null;

      let kind: 'password' | 'identifier' | 'provider' | 'passkey';
      if (hasPassword && methodId === passwordMethodId(identityId)) kind = 'password';
      else if (identifiers.some((i) => i.id === methodId)) kind = 'identifier';
      else if (links.some((l) => l.id === methodId)) kind = 'provider';
      else if (passkeys.some((p) => p.id === methodId)) kind = 'passkey';
      else throw new Problem('identity.sign_in_method_not_found');

      // A way in (docs/api.md, "4.3 Remove a method") is the password with at least one verified
      // identifier, a linked provider that is configured now (a link to a disabled provider cannot
      // open a session), a passkey while passkeys are on (a relying party is configured), or a
      // verified address that may sign in by code now (SIGN_IN_CODES names its channel, and the
      // identity has no password left or SIGN_IN_CODES_WITH_PASSWORD is on).
      const passwordLeft = hasPassword && kind !== 'password';
      const identifiersLeft = identifiers.filter((i) => i.id !== methodId).length;
      const codes = this.deps.config.signInCodes;
      const codeAddressesLeft =
        passwordLeft && !codes.withPassword
          ? 0
          : identifiers.filter((i) => i.id !== methodId && codes.channels.includes(i.type)).length;
      const providersLeft = links.filter((l) => l.id !== methodId && enabled.has(l.provider)).length;
      const passkeysLeft = this.deps.config.webauthn ? passkeys.filter((p) => p.id !== methodId).length : 0;
      if (
        !(
          (passwordLeft && identifiersLeft > 0) ||
          providersLeft > 0 ||
          passkeysLeft > 0 ||
          codeAddressesLeft > 0
        )
      ) {
        throw new Problem('identity.last_sign_in_method');
      }

      const removed =
        kind === 'password'
          ? await removePassword(trx, identityId, now)
          : kind === 'identifier'
            ? await this.removeAddress(trx, methodId, identityId, now)
            : kind === 'provider'
              ? await removeLink(trx, methodId, identityId, now)
              : await removePasskey(trx, methodId, identityId, now);
      if (!removed) throw new Problem('identity.sign_in_method_not_found');
      // A passkey is also a second factor: without any left, no session acts in an organization
      // that requires one (the identity row is locked above, as a switch's check holds it).
      if (kind === 'passkey') await clearActiveRequiringSecondFactor(trx, identityId);

      const revoked = await endOtherSessions(trx, principal, 'sign_in_method_removed', now);
      const { events } = this.deps;
      await sessionsEnded(events, trx, identityId, identityId, revoked.live, 'sign_in_method_removed');
      // A passkey has its own event; removing the password changes it (to none); an address or a
      // linked provider changes the identity.
      if (kind === 'passkey')
        await passkeyChanged(events, trx, 'identity.passkey.removed', identityId, methodId);
      else if (kind === 'password') {
        await identityChanged(events, trx, 'identity.password_changed', identityId, identityId, {
          via: 'removal',
        });
      } else await identityChanged(events, trx, 'identity.updated', identityId, identityId);
      await this.deps.audit.appendOwn(trx, 'identity.sign_in_method.removed', identityId, { kind, methodId });
      return revoked.count;
    });
    this.deps.signals.sessionsRevoked('sign_in_method_removed', ended);
  }

  /** A code in flight to a removed address (step-up, recovery) must not answer for it any more. */
  private async removeAddress(trx: Executor, id: string, identityId: string, now: Date): Promise<boolean> {
    if (!(await removeIdentifier(trx, id, now, { identityId }))) return false;
    await revokeChallenges(trx, { identifierId: id }, now);
    return true;
  }
}
