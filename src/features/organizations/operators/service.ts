import { randomUUID } from 'node:crypto';
import type { Config } from '../../../config.js';
import type { AuditEvent, AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Database, Executor } from '../../../platform/db/database.js';
import { strongEtag } from '../../../platform/http/conditional.js';
import type { CursorCodec, CursorScope } from '../../../platform/pagination/cursor.js';
import {
  type KeysetWindow,
  keysetPage,
  type PageInfo,
  type PageQuery,
} from '../../../platform/pagination/page.js';
import { Problem } from '../../../platform/problem.js';
import type { EventLog } from '../../events/log.js';
import { membershipChanged, organizationChanged, organizationData } from '../events.js';
import * as orgs from '../repository.js';
import { OrganizationRoles, OWNER_ROLE } from '../roles.js';
import * as repo from './repository.js';
import type { CreateOrganizationBody, UpdateOrganizationBody } from './schemas.js';
import { organizationItem as item, organizationDetailView } from './view.js';

/** What the operators' organization acts use. */
export interface AdminOrganizationDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  cursors: CursorCodec;
  config: Pick<Config, 'organizations'>;
  events: EventLog;
}

/** The audit name of an operator's read of members' identifiers (one record per identity shown). */
const IDENTITY_READ = 'admin.identity.read';

const notFound = () => new Problem('admin.organization_not_found');
/** Strictly forward, even within one millisecond: a tag names exactly one version. */
function nextVersion(now: Date, previous: Date): Date {
  const before = new Date(previous);
  return now > before ? now : new Date(before.getTime() + 1);
}

/**
 * The operators' acts on organizations (docs/organizations.md, "Operators"). Every write takes the
 * organization's row lock, the one every membership change takes (organizations/repository.ts), so
 * the last-owner rule holds between operators and members alike; an act naming an identity holds
 * it FOR KEY SHARE first (the order an erasure takes its locks in: identity, then organizations). Every
 * write appends its audit record, actor `admin:<key name>`, in its own transaction; a read of the
 * members' identifiers appends one read record per identity shown, as the identity search does.
 * ORGANIZATION_CREATION governs only the session route: operators create whatever it says.
 */
export class AdminOrganizations {
  readonly roles: OrganizationRoles;

  constructor(private readonly deps: AdminOrganizationDeps) {
    this.roles = new OrganizationRoles(deps.config);
  }

  async list(scope: CursorScope, query: PageQuery): Promise<{ items: unknown[]; pageInfo: PageInfo }> {
    const { db } = this.deps.database;
    const fetch = (window: KeysetWindow) => repo.organizationsPage(db, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return { items: items.map(item), pageInfo };
  }

  async read(organizationId: string) {
    const row = await repo.organizationDetail(this.deps.database.db, organizationId);
    if (!row) throw notFound();
    return {
      organization: organizationDetailView(row),
      etag: this.#etag(row),
    };
  }

  /** A new organization with `ownerIdentityId` as its owner. */
  async create(input: CreateOrganizationBody, actor: string) {
    const id = randomUUID();
    const name = input.name.trim();
    return this.deps.database.db.transaction().execute(async (trx) => {
      await this.#liveIdentity(trx, input.ownerIdentityId);
      const now = this.deps.clock.now();
      const created = await orgs.insertOrganization(trx, {
        id,
        name,
        slug: input.slug,
        createdBy: input.ownerIdentityId,
        now,
      });
      if (!created) throw new Problem('organization.slug_taken');
      await orgs.insertMembership(trx, {
        organizationId: id,
        identityId: input.ownerIdentityId,
        role: OWNER_ROLE,
        now,
      });
      await organizationChanged(this.deps.events, trx, 'organization.created', actor, id);
      await membershipChanged(this.deps.events, trx, 'organization.membership.created', actor, {
        organizationId: id,
        identityId: input.ownerIdentityId,
        role: OWNER_ROLE,
      });
      await this.#audit(trx, 'organization.created', actor, input.ownerIdentityId, {
        organizationId: id,
        slug: input.slug,
        byOperator: true,
      });
      const row: repo.AdminOrganizationRow = {
        id,
        name,
        slug: input.slug,
        requireSecondFactor: false,
        requireSso: false,
        createdBy: input.ownerIdentityId,
        createdAt: now,
        updatedAt: now,
        disabledAt: null,
      };
      return { organization: { ...item(row), memberCount: 1, ownerCount: 1 }, etag: this.#etag(row) };
    });
  }

  /**
   * Its name or its policy (requireSecondFactor), as the organization's owners may change them.
   * Turning the policy on also holds for those already acting in it: a session whose identity has
   * no second factor stops acting there now, as when an owner turns it on.
   */
  async update(organizationId: string, change: UpdateOrganizationBody, actor: string) {
    await this.#write(organizationId, async (trx, org, now) => {
      await orgs.updateOrganization(trx, organizationId, {
        ...(change.name !== undefined ? { name: change.name.trim() } : {}),
        ...(change.requireSecondFactor !== undefined
          ? { requireSecondFactor: change.requireSecondFactor }
          : {}),
        updatedAt: nextVersion(now, org.updatedAt),
      });
      const cleared =
        change.requireSecondFactor === true && !org.requireSecondFactor
          ? await orgs.clearActiveWithoutSecondFactor(trx, organizationId)
          : 0;
      await organizationChanged(this.deps.events, trx, 'organization.updated', actor, organizationId);
      await this.#audit(trx, 'organization.updated', actor, organizationId, {
        organizationId,
        ...(change.name !== undefined ? { name: true } : {}),
        ...(change.requireSecondFactor !== undefined
          ? { requireSecondFactor: change.requireSecondFactor }
          : {}),
        ...(cleared > 0 ? { sessionsCleared: cleared } : {}),
        byOperator: true,
      });
    });
    return this.read(organizationId);
  }

  /**
   * Disabled: no longer anyone's active organization (the session guard and every renewal join
   * only live organizations), not listed to its members, not switchable to, not changeable by them.
   * Memberships and sessions' choice stay, so enabling it again restores both. Idempotent.
   */
  async disable(organizationId: string, actor: string): Promise<void> {
    await this.#write(organizationId, async (trx, org, now) => {
      const changed = await orgs.setDisabled(trx, organizationId, now, nextVersion(now, org.updatedAt));
      if (changed)
        await organizationChanged(this.deps.events, trx, 'organization.updated', actor, organizationId);
      await this.#audit(trx, 'organization.disabled', actor, organizationId, { organizationId, changed });
    });
  }

  async enable(organizationId: string, actor: string): Promise<void> {
    await this.#write(organizationId, async (trx, org, now) => {
      const changed = await orgs.setDisabled(trx, organizationId, null, nextVersion(now, org.updatedAt));
      if (changed)
        await organizationChanged(this.deps.events, trx, 'organization.updated', actor, organizationId);
      await this.#audit(trx, 'organization.enabled', actor, organizationId, { organizationId, changed });
    });
  }

  /** Gone, with its memberships; sessions acting in it have no active organization from now on. */
  async delete(organizationId: string, actor: string): Promise<void> {
    await this.#write(organizationId, async (trx, org) => {
      const members = (await repo.organizationDetail(trx, organizationId))?.members ?? 0;
      const data = await organizationData(trx, organizationId);
      await orgs.deleteOrganization(trx, organizationId);
      if (data)
        await this.deps.events.append(trx, { type: 'organization.deleted', actor, organizationId, data });
      await this.#audit(trx, 'organization.deleted', actor, organizationId, {
        organizationId,
        slug: org.slug,
        membershipsRemoved: members,
      });
    });
  }

  /** The members, newest first, each with its first verified identifier unmasked. */
  async members(scope: CursorScope, query: PageQuery, organizationId: string, actor: string) {
    const { db } = this.deps.database;
    if (!(await repo.organizationDetail(db, organizationId))) throw notFound();
    const fetch = (window: KeysetWindow) => orgs.membersPage(db, organizationId, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    if (items.length > 0) {
      await db.transaction().execute(async (trx) => {
        for (const m of items) {
          await this.deps.audit.append(trx, {
            name: IDENTITY_READ,
            actor,
            target: m.id,
            outcome: 'success',
            details: { view: 'organization_members', organizationId },
          });
        }
      });
    }
    return {
      items: items.map((m) => ({
        identityId: m.id,
        role: m.role,
        joinedAt: new Date(m.createdAt).toISOString(),
        identifier:
          m.displayType && m.displayValue
            ? { type: m.displayType as 'email' | 'phone', value: m.displayValue }
            : null,
      })),
      pageInfo,
    };
  }

  /**
   * Adds the identity with `role`, or changes its role. Demoting the last owner is 409
   * organization.last_owner, decided under the organization's lock. `added` tells which it was.
   */
  async setMember(
    organizationId: string,
    identityId: string,
    role: string,
    actor: string,
  ): Promise<{ member: { identityId: string; role: string }; added: boolean }> {
    if (!this.roles.known(role)) throw new Problem('organization.role_unknown');
    return this.deps.database.db.transaction().execute(async (trx) => {
      await this.#liveIdentity(trx, identityId);
      if (!(await repo.lockAnyOrganization(trx, organizationId))) throw notFound();
      const current = await orgs.roleOf(trx, organizationId, identityId);
      const now = this.deps.clock.now();
      const member = { identityId, role };
      if (current === undefined) {
        await orgs.insertMembership(trx, { organizationId, identityId, role, now });
        await membershipChanged(this.deps.events, trx, 'organization.membership.created', actor, {
          organizationId,
          identityId,
          role,
        });
        await this.#audit(trx, 'organization.member.added', actor, identityId, { organizationId, role });
        return { member, added: true };
      }
      if (current === role) return { member, added: false };
      if (current === OWNER_ROLE) await this.#keepsAnOwner(trx, organizationId);
      await orgs.setRole(trx, organizationId, identityId, role, now);
      await membershipChanged(this.deps.events, trx, 'organization.membership.updated', actor, {
        organizationId,
        identityId,
        role,
      });
      await this.#audit(trx, 'organization.member.role_changed', actor, identityId, {
        organizationId,
        from: current,
        to: role,
      });
      return { member, added: false };
    });
  }

  /** Removes a member; the last owner stays (409 organization.last_owner). */
  async removeMember(organizationId: string, identityId: string, actor: string): Promise<void> {
    await this.#write(organizationId, async (trx) => {
      const current = await orgs.roleOf(trx, organizationId, identityId);
      if (current === undefined) throw new Problem('organization.member_not_found');
      if (current === OWNER_ROLE) await this.#keepsAnOwner(trx, organizationId);
      await orgs.deleteMembership(trx, organizationId, identityId);
      await membershipChanged(this.deps.events, trx, 'organization.membership.deleted', actor, {
        organizationId,
        identityId,
        role: current,
      });
      await this.#audit(trx, 'organization.member.removed', actor, identityId, {
        organizationId,
        role: current,
        left: false,
      });
    });
  }

  /** One write under the organization's lock; unknown is 404 admin.organization_not_found. */
  async #write(
    organizationId: string,
    act: (trx: Executor, org: repo.AdminOrganizationRow, now: Date) => Promise<void>,
  ): Promise<void> {
    await this.deps.database.db.transaction().execute(async (trx) => {
      const org = await repo.lockAnyOrganization(trx, organizationId);
      if (!org) throw notFound();
      await act(trx, org, this.deps.clock.now());
    });
  }

  /** Holds the identity against an erasure (repo.shareIdentity): unknown 404, erased 409. */
  async #liveIdentity(trx: Executor, identityId: string): Promise<void> {
    const identity = await repo.shareIdentity(trx, identityId);
    if (!identity) throw new Problem('admin.identity_not_found');
    if (identity.erasedAt !== null) throw new Problem('admin.identity_erased');
  }

  async #keepsAnOwner(trx: Executor, organizationId: string): Promise<void> {
    if ((await orgs.ownerCount(trx, organizationId)) <= 1) throw new Problem('organization.last_owner');
  }

  #etag(o: repo.AdminOrganizationRow): string {
    return strongEtag(o.id, new Date(o.updatedAt).toISOString(), 'admin');
  }

  #audit(
    trx: Executor,
    name: string,
    actor: string,
    target: string,
    details: NonNullable<AuditEvent['details']>,
  ) {
    return this.deps.audit.append(trx, { name, actor, target, outcome: 'success', details });
  }
}
