import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { type Precondition, preconditionHolds, strongEtag } from '../../platform/http/conditional.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../platform/pagination/page.js';
import { Problem } from '../../platform/problem.js';
import type { EventLog } from '../events/log.js';
import { shownName } from '../identities/profile.js';
import { verifiedIdentifiers } from '../identities/repository.js';
import { membershipChanged, organizationChanged } from './events.js';
import * as repo from './repository.js';
import { OrganizationRoles, OWNER_ROLE, type Permission, type RoleEntry } from './roles.js';

/** What organizations, memberships and roles use. */
export interface OrganizationServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  cursors: CursorCodec;
  config: Pick<Config, 'organizations'>;
  events: EventLog;
}

export interface OrganizationView {
  id: string;
  name: string;
  slug: string;
  requireSecondFactor: boolean;
  requireSso: boolean;
  createdAt: string;
  updatedAt: string;
  role: string;
  permissions: Permission[];
  roles: RoleEntry[];
}

const notFound = () => new Problem('organization.not_found');
const denied = () => new Problem('organization.permission_denied');

/**
 * Organizations and their memberships (docs/organizations.md). Every read and every decision takes
 * the caller's role from the database in the request's own statement, never from a token's claims;
 * every membership change locks the organization row first, then re-reads the roles it decides by,
 * so the last-owner rule holds under any interleaving. Each write appends its audit record in its
 * own transaction.
 */
export class OrganizationService {
  readonly roles: OrganizationRoles;

  constructor(private readonly deps: OrganizationServiceDeps) {
    this.roles = new OrganizationRoles(deps.config);
  }

  /** POST /organizations: the caller becomes its owner. */
  async create(
    identityId: string,
    input: { name: string; slug: string },
  ): Promise<{ organization: OrganizationView; etag: string }> {
    if (this.deps.config.organizations.creation !== 'anyone')
      throw new Problem('organization.creation_disabled');
    const { db } = this.deps.database;
    // A session can be opened by a passkey or a provider link alone: an identity without a
    // verified address or number has nobody to be reached at, and may not found an organization.
    if ((await verifiedIdentifiers(db, identityId)).length === 0)
      throw new Problem('organization.identifier_required');
    const now = this.deps.clock.now();
    const id = randomUUID();
    const name = input.name.trim();
    await db.transaction().execute(async (trx) => {
      if (!(await repo.insertOrganization(trx, { id, name, slug: input.slug, createdBy: identityId, now })))
        throw new Problem('organization.slug_taken');
      await repo.insertMembership(trx, { organizationId: id, identityId, role: OWNER_ROLE, now });
      await organizationChanged(this.deps.events, trx, 'organization.created', identityId, id);
      await membershipChanged(this.deps.events, trx, 'organization.membership.created', identityId, {
        organizationId: id,
        identityId,
        role: OWNER_ROLE,
      });
      await this.#audit(trx, 'organization.created', identityId, identityId, {
        organizationId: id,
        slug: input.slug,
      });
    });
    return this.#versioned(
      {
        id,
        name,
        slug: input.slug,
        requireSecondFactor: false,
        requireSso: false,
        createdAt: now,
        updatedAt: now,
      },
      OWNER_ROLE,
    );
  }

  /** GET /organizations: the caller's memberships, newest first, the session's active one marked. */
  async list(scope: CursorScope, query: PageQuery, activeOrganizationId: string | null) {
    const fetch = (window: KeysetWindow) =>
      repo.membershipsPage(this.deps.database.db, scope.subject, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return {
      items: items.map((m) => ({
        id: m.id,
        name: m.name,
        slug: m.slug,
        role: m.role,
        roleDisplayName: this.roles.displayName(m.role),
        requireSecondFactor: m.requireSecondFactor,
        active: m.id === activeOrganizationId,
      })),
      pageInfo,
    };
  }

  /**
   * GET /organizations/{id}, with its strong ETag. An unknown organization and one the caller does
   * not belong to answer the identical 404 (no enumeration).
   */
  async read(
    identityId: string,
    organizationId: string,
  ): Promise<{ organization: OrganizationView; etag: string }> {
    const found = await repo.memberView(this.deps.database.db, organizationId, identityId);
    if (!found) throw notFound();
    return this.#versioned(found, found.role);
  }

  /**
   * PATCH /organizations/{id}: `organization:update`. With If-Match, 412 unless it names the
   * version the organization has under its row lock.
   */
  async update(
    identityId: string,
    organizationId: string,
    change: { name?: string; requireSecondFactor?: boolean },
    pre: Precondition,
  ): Promise<{ organization: OrganizationView; etag: string }> {
    return this.deps.database.db.transaction().execute(async (trx) => {
      const { organization, role } = await this.#locked(trx, organizationId, identityId);
      if (!this.roles.can(role, 'organization:update')) throw denied();
      if (!preconditionHolds(pre, this.#etag(organization, role))) throw new Problem('precondition.failed');
      const now = this.deps.clock.now();
      const updated = await repo.updateOrganization(trx, organizationId, {
        ...(change.name !== undefined ? { name: change.name.trim() } : {}),
        ...(change.requireSecondFactor !== undefined
          ? { requireSecondFactor: change.requireSecondFactor }
          : {}),
        // Strictly forward, even within one millisecond: a tag names exactly one version.
        updatedAt: now > organization.updatedAt ? now : new Date(organization.updatedAt.getTime() + 1),
      });
      // Turning the policy on also holds for those already acting in the organization: a session
      // whose identity has no second factor stops acting in it now, not only at its next switch.
      const cleared =
        change.requireSecondFactor === true && !organization.requireSecondFactor
          ? await repo.clearActiveWithoutSecondFactor(trx, organizationId)
          : 0;
      await organizationChanged(this.deps.events, trx, 'organization.updated', identityId, organizationId);
      await this.#audit(trx, 'organization.updated', identityId, identityId, {
        organizationId,
        ...(change.name !== undefined ? { name: true } : {}),
        ...(change.requireSecondFactor !== undefined
          ? { requireSecondFactor: change.requireSecondFactor }
          : {}),
        ...(cleared > 0 ? { sessionsCleared: cleared } : {}),
      });
      return this.#versioned(updated, role);
    });
  }

  /**
   * GET /organizations/{id}/members: `members:read`; the same 404 as GET for a non-member. Those
   * who manage members (`members:manage`: owners, admins) see each member's address and name as
   * they are, to know who is who; everyone else sees the address masked and no name.
   */
  async members(scope: CursorScope, query: PageQuery, identityId: string, organizationId: string) {
    const { db } = this.deps.database;
    const me = await repo.memberView(db, organizationId, identityId);
    if (!me) throw notFound();
    if (!this.roles.can(me.role, 'members:read')) throw denied();
    const plain = this.roles.can(me.role, 'members:manage');
    const fetch = (window: KeysetWindow) => repo.membersPage(db, organizationId, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return {
      items: items.map((m) => ({
        identityId: m.id,
        role: m.role,
        joinedAt: new Date(m.createdAt).toISOString(),
        display:
          m.displayType && m.displayValue
            ? plain
              ? m.displayValue
              : maskIdentifier(m.displayType as 'email' | 'phone', m.displayValue)
            : null,
        masked: !plain,
        name: plain ? shownName(m) : null,
      })),
      pageInfo,
    };
  }

  /**
   * PUT /organizations/{id}/members/{identityId}/role: `members:manage`, and the caller must hold
   * every permission of both the member's current role and the new one (only an owner touches
   * `owner`). Demoting the last owner is 409 organization.last_owner.
   */
  async setRole(
    identityId: string,
    organizationId: string,
    memberId: string,
    role: string,
  ): Promise<{ identityId: string; role: string }> {
    if (!this.roles.known(role)) throw new Problem('organization.role_unknown');
    return this.deps.database.db.transaction().execute(async (trx) => {
      const { role: mine } = await this.#locked(trx, organizationId, identityId);
      if (!this.roles.can(mine, 'members:manage')) throw denied();
      const current = await repo.roleOf(trx, organizationId, memberId);
      if (current === undefined) throw new Problem('organization.member_not_found');
      if (!this.roles.mayAssign(mine, current) || !this.roles.mayAssign(mine, role)) throw denied();
      if (current === role) return { identityId: memberId, role };
      if (current === OWNER_ROLE) await this.#keepsAnOwner(trx, organizationId);
      await repo.setRole(trx, organizationId, memberId, role, this.deps.clock.now());
      await membershipChanged(this.deps.events, trx, 'organization.membership.updated', identityId, {
        organizationId,
        identityId: memberId,
        role,
      });
      await this.#audit(trx, 'organization.member.role_changed', identityId, memberId, {
        organizationId,
        from: current,
        to: role,
      });
      return { identityId: memberId, role };
    });
  }

  /**
   * DELETE /organizations/{id}/members/{identityId}: the caller leaves (anyone may), or removes
   * another member (`members:manage`, and a role the caller could assign: only an owner removes an
   * owner). The last owner can neither leave nor be removed.
   */
  async removeMember(identityId: string, organizationId: string, memberId: string): Promise<void> {
    await this.deps.database.db.transaction().execute(async (trx) => {
      const { role: mine } = await this.#locked(trx, organizationId, identityId);
      const leaving = memberId === identityId;
      const current = leaving ? mine : await repo.roleOf(trx, organizationId, memberId);
      if (!leaving) {
        if (!this.roles.can(mine, 'members:manage')) throw denied();
        if (current === undefined) throw new Problem('organization.member_not_found');
        if (!this.roles.mayAssign(mine, current)) throw denied();
      }
      if (current === OWNER_ROLE) await this.#keepsAnOwner(trx, organizationId);
      await repo.deleteMembership(trx, organizationId, memberId);
      await membershipChanged(this.deps.events, trx, 'organization.membership.deleted', identityId, {
        organizationId,
        identityId: memberId,
        role: current ?? null,
      });
      await this.#audit(trx, 'organization.member.removed', identityId, memberId, {
        organizationId,
        role: current ?? null,
        left: leaving,
      });
    });
  }

  /**
   * POST /organizations/{id}/ownership-transfers (owner only, elevated): the member named becomes
   * an owner and the caller an admin, in one transaction.
   */
  async transfer(
    identityId: string,
    organizationId: string,
    memberId: string,
  ): Promise<{ identityId: string; role: string }> {
    return this.deps.database.db.transaction().execute(async (trx) => {
      const { role: mine } = await this.#locked(trx, organizationId, identityId);
      if (!this.roles.can(mine, 'organization:transfer') || mine !== OWNER_ROLE) throw denied();
      if (memberId === identityId) throw new Problem('organization.member_not_found');
      const target = await repo.roleOf(trx, organizationId, memberId);
      if (target === undefined) throw new Problem('organization.member_not_found');
      const now = this.deps.clock.now();
      await repo.setRole(trx, organizationId, memberId, OWNER_ROLE, now);
      await repo.setRole(trx, organizationId, identityId, 'admin', now);
      for (const [who, role] of [
        [memberId, OWNER_ROLE],
        [identityId, 'admin'],
      ] as const) {
        await membershipChanged(this.deps.events, trx, 'organization.membership.updated', identityId, {
          organizationId,
          identityId: who,
          role,
        });
      }
      await this.#audit(trx, 'organization.ownership.transferred', identityId, memberId, {
        organizationId,
        from: target,
      });
      return { identityId: memberId, role: OWNER_ROLE };
    });
  }

  /**
   * The organization row, locked, and the caller's role read after the lock. A missing or disabled
   * organization and one the caller does not belong to are the same 404.
   */
  async #locked(trx: Executor, organizationId: string, identityId: string) {
    const organization = await repo.lockOrganization(trx, organizationId);
    if (!organization) throw notFound();
    const role = await repo.roleOf(trx, organizationId, identityId);
    if (role === undefined) throw notFound();
    return { organization, role };
  }

  /** Under the organization lock: an owner is about to stop being one; another must remain. */
  async #keepsAnOwner(trx: Executor, organizationId: string): Promise<void> {
    if ((await repo.ownerCount(trx, organizationId)) <= 1) throw new Problem('organization.last_owner');
  }

  #etag(o: repo.OrganizationRow, role: string): string {
    // The caller's role, and the roles it may grant (the configuration's), are part of what GET
    // answers, so they are part of the version too.
    return strongEtag(
      o.id,
      new Date(o.updatedAt).toISOString(),
      role,
      JSON.stringify(this.roles.catalogue(role)),
    );
  }

  #versioned(o: repo.OrganizationRow, role: string) {
    return { organization: this.#view(o, role), etag: this.#etag(o, role) };
  }

  #view(o: repo.OrganizationRow, role: string): OrganizationView {
    return {
      id: o.id,
      name: o.name,
      slug: o.slug,
      requireSecondFactor: o.requireSecondFactor,
      requireSso: o.requireSso,
      createdAt: new Date(o.createdAt).toISOString(),
      updatedAt: new Date(o.updatedAt).toISOString(),
      role,
      permissions: this.roles.permissions(role),
      roles: this.roles.catalogue(role),
    };
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
