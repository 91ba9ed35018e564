import { randomUUID } from 'node:crypto';
import type { Config } from '../../../config.js';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import { hmacHex, opaqueToken } from '../../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../../platform/db/database.js';
import { maskIdentifier } from '../../../platform/notify/mask.js';
import type { DeliveryResult, Notifier } from '../../../platform/notify/notifier.js';
import { invitationMessage } from '../../../platform/notify/templates.js';
import type { CursorCodec, CursorScope } from '../../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../../platform/pagination/page.js';
import { Problem } from '../../../platform/problem.js';
import type { MessageLimits, MessageSubject } from '../../../platform/rate-limit/guess-budget.js';
import { destinationSubject } from '../../../platform/rate-limit/guess-budget.js';
import type { Locale } from '../../../shared/locales.js';
import type { ChallengeFlow } from '../../challenges/service.js';
import type { EventLog } from '../../events/log.js';
import type { IdentifierInput, IdentifierType } from '../../identities/identifier.js';
import { shownName } from '../../identities/profile.js';
import { findIdentifier, identityLocale, localeOf } from '../../identities/repository.js';
import { invitationChanged, membershipChanged } from '../events.js';
import { lockAnyOrganization, organizationDetail } from '../operators/repository.js';
import * as repo from '../repository.js';
import { OrganizationRoles } from '../roles.js';
import * as invitations from './repository.js';

/** What invitations use. */
export interface InvitationServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  cursors: CursorCodec;
  notifier: Notifier;
  messages: MessageLimits;
  /** The house's normalisation and channel check of an address to be written to. */
  challenges: Pick<ChallengeFlow, 'reachableAddress'>;
  config: Pick<Config, 'organizations' | 'publicOrigin' | 'brand'> & {
    keys: Pick<Config['keys'], 'organizationInvitations'>;
  };
  events: EventLog;
}

export interface SentInvitation {
  id: string;
  identifierType: IdentifierType;
  identifier: string;
  role: string;
  expiresAt: string;
  delivery: { status: DeliveryResult['status']; resendable: boolean };
}

const notFound = () => new Problem('organization.not_found');
const denied = () => new Problem('organization.permission_denied');
const unknownInvitation = () => new Problem('organization.invitation_not_found');

/**
 * Organization invitations (docs/organizations.md, "Invitations"). A token is a 256-bit bearer
 * capability, stored only as its keyed hash. Every write locks the organization row first, as
 * every membership change does, so a send, a revocation and an acceptance of one organization
 * serialise, and an acceptance's membership insert is under the same lock as the last-owner rule.
 */
export class InvitationService {
  readonly #roles: OrganizationRoles;

  constructor(private readonly deps: InvitationServiceDeps) {
    this.#roles = new OrganizationRoles(deps.config);
  }

  #hash(token: string): string {
    return hmacHex(this.deps.config.keys.organizationInvitations, token);
  }

  /**
   * POST /organizations/{id}/invitations: `members:invite`, and a role the caller may grant (only
   * an owner invites an owner). Whether the address has an account, or is already a member's, is
   * never looked at: the answer and the message are the same. A pending invitation to the same
   * address is revoked and replaced. The message counts against the sender's and the destination's
   * windows in the sending transaction; past either, 429 and nothing is written or sent.
   */
  async send(
    identityId: string,
    organizationId: string,
    input: IdentifierInput & { role: string },
    sender: MessageSubject,
    requestLocale?: Locale,
  ): Promise<SentInvitation> {
    return this.#send(input, requestLocale, {
      inviter: identityId,
      actor: identityId,
      subjects: [sender],
      details: {},
      lock: async (trx) => {
        const { organization, role: mine } = await this.#locked(trx, organizationId, identityId);
        if (!this.#roles.can(mine, 'members:invite')) throw denied();
        if (!this.#roles.mayAssign(mine, input.role)) throw denied();
        return organization;
      },
    });
  }

  /**
   * POST /admin/v1/organizations/{id}/invitations: an operator invites into any role, as the
   * service rather than as a member, so the invitation names no inviter (`invited_by` null) and the
   * invitee's page says "You are invited"; the operator is the event's actor and the audit record's.
   * Under the organization's lock as every send; a disabled organization answers 409
   * admin.organization_disabled. The message counts against the destination's window (an operator
   * has no client address to count against).
   */
  async operatorSend(
    actor: string,
    organizationId: string,
    input: IdentifierInput & { role: string },
    requestLocale?: Locale,
  ): Promise<SentInvitation> {
    return this.#send(input, requestLocale, {
      inviter: null,
      actor,
      subjects: [],
      details: { byOperator: true },
      lock: async (trx) => {
        const organization = await lockAnyOrganization(trx, organizationId);
        if (!organization) throw new Problem('admin.organization_not_found');
        if (organization.disabledAt) throw new Problem('admin.organization_disabled');
        return organization;
      },
    });
  }

  /** The send both routes share: checked under `lock`, written, counted, told, then sent. */
  async #send(
    input: IdentifierInput & { role: string },
    requestLocale: Locale | undefined,
    by: {
      inviter: string | null;
      actor: string;
      subjects: MessageSubject[];
      details: Record<string, boolean>;
      lock: (trx: Executor) => Promise<{ id: string; name: string }>;
    },
  ): Promise<SentInvitation> {
    const to = this.deps.challenges.reachableAddress(input);
    if (!this.#roles.known(input.role)) throw new Problem('organization.role_unknown');
    const token = opaqueToken();
    const id = randomUUID();
    const now = this.deps.clock.now();
    const ttl = this.deps.config.organizations.invitationTtl;
    const expiresAt = new Date(now.getTime() + ttl * 1000);
    const organization = await this.deps.database.db.transaction().execute(async (trx) => {
      const organization = await by.lock(trx);
      const organizationId = organization.id;
      const replaced = await invitations.revokePendingFor(trx, {
        organizationId,
        identifierType: to.type,
        identifier: to.value,
        now,
      });
      await invitations.insertInvitation(trx, {
        id,
        organizationId,
        identifierType: to.type,
        identifier: to.value,
        role: input.role,
        tokenHash: this.#hash(token),
        invitedBy: by.inviter,
        now,
        expiresAt,
      });
      await this.deps.messages.count([...by.subjects, destinationSubject(to)], trx);
      for (const old of replaced)
        await invitationChanged(this.deps.events, trx, 'organization.invitation.revoked', by.actor, old);
      await invitationChanged(this.deps.events, trx, 'organization.invitation.created', by.actor, id);
      await this.#audit(trx, 'organization.invitation.sent', by.actor, id, {
        organizationId,
        identifierType: to.type,
        role: input.role,
        replaced: replaced.length,
        ...by.details,
      });
      return organization;
    });
    // After the commit: a slow channel never holds the organization lock.
    const link = `${this.deps.config.publicOrigin}/account/#/invitations/${token}`;
    const locale = await this.#invitationLocale(to, by.inviter, requestLocale);
    const delivery = await this.deps.notifier.send({
      to: to.value,
      type: to.type,
      ...invitationMessage(locale, this.deps.config.brand, {
        organization: organization.name,
        role: input.role,
        link,
        token,
        expiresInDays: ttl / 86400,
      }),
    });
    return {
      id,
      identifierType: to.type,
      identifier: maskIdentifier(to.type, to.value),
      role: input.role,
      expiresAt: expiresAt.toISOString(),
      delivery: { status: delivery.status, resendable: delivery.resendable },
    };
  }

  /**
   * The invitation's language (docs/messages.md, "Which language"): the invitee's own when the
   * address is already an identity's verified one; else the request's (the inviter's pages,
   * Accept-Language); else the inviter's own language. Read after the commit, by the same
   * statements whoever holds the address, and never told in the answer.
   */
  async #invitationLocale(
    to: { type: IdentifierType; value: string },
    inviter: string | null,
    requestLocale: Locale | undefined,
  ): Promise<Locale> {
    const { db } = this.deps.database;
    const holder = await findIdentifier(db, to);
    if (holder?.verifiedAt) return identityLocale(db, holder.identityId);
    // An operator's invitation without Accept-Language: the service's default (English).
    return requestLocale ?? (inviter ? identityLocale(db, inviter) : localeOf(undefined));
  }

  /**
   * GET /organizations/{id}/invitations: the pending ones, newest first (`members:invite`). Only
   * those who invite see this list, so the address is shown as it was invited, not masked.
   */
  async list(scope: CursorScope, query: PageQuery, identityId: string, organizationId: string) {
    const { db } = this.deps.database;
    const me = await repo.memberView(db, organizationId, identityId);
    if (!me) throw notFound();
    if (!this.#roles.can(me.role, 'members:invite')) throw denied();
    return this.#pendingPage(scope, query, organizationId);
  }

  /** DELETE /organizations/{id}/invitations/{invitationId} (`members:invite`). */
  async revoke(identityId: string, organizationId: string, invitationId: string): Promise<void> {
    await this.deps.database.db.transaction().execute(async (trx) => {
      const { role: mine } = await this.#locked(trx, organizationId, identityId);
      if (!this.#roles.can(mine, 'members:invite')) throw denied();
      await this.#revoked(trx, identityId, organizationId, invitationId);
    });
  }

  /**
   * GET /admin/v1/organizations/{id}/invitations: the pending ones, newest first, for an operator
   * (disabled organization included). Unknown organization: 404 admin.organization_not_found.
   */
  async operatorList(scope: CursorScope, query: PageQuery, organizationId: string) {
    const { db } = this.deps.database;
    if (!(await organizationDetail(db, organizationId))) throw new Problem('admin.organization_not_found');
    return this.#pendingPage(scope, query, organizationId);
  }

  /**
   * DELETE /admin/v1/organizations/{id}/invitations/{invitationId}: an operator revokes a pending
   * invitation, under the organization's lock, with the event and the audit record naming the operator.
   */
  async operatorRevoke(actor: string, organizationId: string, invitationId: string): Promise<void> {
    await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await lockAnyOrganization(trx, organizationId)))
        throw new Problem('admin.organization_not_found');
      await this.#revoked(trx, actor, organizationId, invitationId, { byOperator: true });
    });
  }

  /** One pending invitations page as both lists answer it (the address unmasked, newest first). */
  async #pendingPage(scope: CursorScope, query: PageQuery, organizationId: string) {
    const { db } = this.deps.database;
    const now = this.deps.clock.now();
    const fetch = (window: KeysetWindow) => invitations.pendingPage(db, organizationId, now, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return {
      items: items.map((i) => ({
        id: i.id,
        identifierType: i.identifierType,
        identifier: i.identifier,
        role: i.role,
        invitedBy: i.invitedBy,
        createdAt: new Date(i.createdAt).toISOString(),
        expiresAt: new Date(i.expiresAt).toISOString(),
      })),
      pageInfo,
    };
  }

  /** Revokes a pending invitation (the caller holds the organization's lock), with its event and audit. */
  async #revoked(
    trx: Executor,
    actor: string,
    organizationId: string,
    invitationId: string,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    if (!(await invitations.revokeInvitation(trx, organizationId, invitationId, this.deps.clock.now())))
      throw unknownInvitation();
    await invitationChanged(this.deps.events, trx, 'organization.invitation.revoked', actor, invitationId);
    await this.#audit(trx, 'organization.invitation.revoked', actor, invitationId, {
      organizationId,
      ...details,
    });
  }

  /**
   * POST /organization-invitations/lookups, without a session: what the token's holder is invited
   * to. The token is the secret, so each state has its own refusal.
   */
  async lookup(token: string) {
    const { db } = this.deps.database;
    const found = await invitations.invitationByToken(db, this.#hash(token));
    if (!found) throw unknownInvitation();
    this.#refuseUnlessPending(found, this.deps.clock.now());
    const inviter = await invitations.inviterOf(db, found.id);
    const inviterName = inviter ? shownName(inviter) : null;
    return {
      organization: { name: found.organizationName, slug: found.organizationSlug },
      role: found.role,
      roleDisplayName: this.#roles.displayName(found.role),
      // The token went to this address: its holder is shown it whole (the sign-up page fills it in).
      identifierType: found.identifierType,
      identifier: found.identifier,
      invitedBy:
        inviterName || inviter?.identifier
          ? { name: inviterName, identifier: inviter?.identifier ?? null }
          : null,
      expiresAt: new Date(found.expiresAt).toISOString(),
    };
  }

  /**
   * POST /organization-invitations/acceptances: the caller, holding the invited identifier
   * verified, becomes a member with the invitation's role. Under the organization's row lock, one
   * conditional UPDATE marks the invitation accepted (only while pending and unexpired), and the
   * membership is inserted in the same transaction: two acceptances at once give one member and one
   * 409 organization.invitation_accepted. A refusal after the mark (wrong identity, already a
   * member) rolls the mark back, so the invitation stays pending for its rightful holder.
   */
  async accept(identityId: string, token: string) {
    const { db } = this.deps.database;
    const found = await invitations.invitationByToken(db, this.#hash(token));
    if (!found) throw unknownInvitation();
    return db.transaction().execute(async (trx) => {
      const organization = await repo.lockOrganization(trx, found.organizationId);
      if (!organization) throw unknownInvitation();
      const now = this.deps.clock.now();
      if (!(await invitations.acceptInvitation(trx, found.id, identityId, now))) {
        const state = await invitations.invitationState(trx, found.id);
        if (!state) throw unknownInvitation();
        this.#refuseUnlessPending(state, now);
        // Pending by every column yet not updated: cannot happen under the lock; refuse safely.
        throw new Problem('organization.invitation_accepted');
      }
      if (!(await invitations.holdsVerified(trx, identityId, found.identifierType, found.identifier)))
        throw new Problem('organization.invitation_wrong_identity');
      if ((await repo.roleOf(trx, found.organizationId, identityId)) !== undefined)
        throw new Problem('organization.already_member');
      await repo.insertMembership(trx, {
        organizationId: found.organizationId,
        identityId,
        role: found.role,
        now,
      });
      await invitationChanged(
        this.deps.events,
        trx,
        'organization.invitation.accepted',
        identityId,
        found.id,
      );
      await membershipChanged(this.deps.events, trx, 'organization.membership.created', identityId, {
        organizationId: found.organizationId,
        identityId,
        role: found.role,
      });
      await this.#audit(trx, 'organization.invitation.accepted', identityId, identityId, {
        organizationId: found.organizationId,
        invitationId: found.id,
        role: found.role,
      });
      return {
        organization: {
          id: organization.id,
          name: organization.name,
          slug: organization.slug,
          role: found.role,
        },
      };
    });
  }

  /** Refuses an invitation that is no longer pending, each state with its own problem. */
  #refuseUnlessPending(
    i: { expiresAt: Date; acceptedAt: Date | null; revokedAt: Date | null },
    now: Date,
  ): void {
    if (i.acceptedAt !== null) throw new Problem('organization.invitation_accepted');
    if (i.revokedAt !== null) throw new Problem('organization.invitation_revoked');
    if (new Date(i.expiresAt).getTime() <= now.getTime())
      throw new Problem('organization.invitation_expired');
  }

  /** The organization row, locked, and the caller's role read after the lock (else the same 404). */
  async #locked(trx: Executor, organizationId: string, identityId: string) {
    const organization = await repo.lockOrganization(trx, organizationId);
    if (!organization) throw notFound();
    const role = await repo.roleOf(trx, organizationId, identityId);
    if (role === undefined) throw notFound();
    return { organization, role };
  }

  #audit(
    trx: Executor,
    name: string,
    actor: string,
    target: string,
    details: Record<string, string | number | boolean | null>,
  ) {
    return this.deps.audit.append(trx, { name, actor, target, outcome: 'success', details });
  }
}
