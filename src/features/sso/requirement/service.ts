import type { Config } from '../../../config.js';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Database, Executor } from '../../../platform/db/database.js';
import type { Signals } from '../../../platform/metrics/signals.js';
import { Problem } from '../../../platform/problem.js';
import type { EventLog } from '../../events/log.js';
import { CONNECTIONS_MANAGE } from '../../organizations/connections/service.js';
import { organizationChanged } from '../../organizations/events.js';
import { lockAnyOrganization } from '../../organizations/operators/repository.js';
import * as orgs from '../../organizations/repository.js';
import { OrganizationRoles } from '../../organizations/roles.js';
import {
  identitiesInDomains,
  lockSsoDomains,
  readiness,
  verifiedDomainsOf,
} from '../../organizations/sso-requirement/repository.js';
import { SSO_REQUIRED_REASON } from '../../organizations/sso-requirement/sweep.js';
import { endSessionsUnderSso } from '../../sessions/sso-required.js';

/** What setting the requirement uses. */
export interface SsoRequirementDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  events: EventLog;
  signals: Signals;
  config: Pick<Config, 'organizations'>;
}

/** Who acts: a member (their role is checked) or an operator (`admin:<key>`). */
export type RequirementActor =
  | { kind: 'member'; identityId: string }
  | { kind: 'operator'; operator: string };

export interface SsoRequirementView {
  organizationId: string;
  requireSso: boolean;
  /** How many identities of the verified domains had their sessions and grants ended by this change. */
  identitiesSignedOut: number;
}

/**
 * "Require SSO" (docs/sso.md, "Require SSO"): set by a member with `connections:manage` or by an
 * operator. Turning it on, in one transaction under the organization's row lock: the setting, then
 * for every identity holding a verified email in one of the organization's verified domains the one
 * revocation every other path uses (sessions/revocations.ts: the epoch moves, so its sessions, the
 * OpenID grants bound to them and any sign-in still committing with the old epoch are dead; each
 * live session revoked with `sso_required` and announced by `session.ended`), then
 * `organization.updated` and the audit record. Turning it off ends nothing and restores nothing.
 */
export class SsoRequirementService {
  readonly #roles: OrganizationRoles;

  constructor(private readonly deps: SsoRequirementDeps) {
    this.#roles = new OrganizationRoles(deps.config);
  }

  async set(
    actor: RequirementActor,
    organizationId: string,
    requireSso: boolean,
  ): Promise<SsoRequirementView> {
    const actorName = actor.kind === 'member' ? actor.identityId : actor.operator;
    let ended = 0;
    const view = await this.deps.database.db.transaction().execute(async (trx) => {
      const current = await this.#locked(trx, actor, organizationId);
      if (requireSso && !current.requireSso) {
        const ready = await readiness(trx, organizationId);
        if (ready.verifiedDomains === 0 || ready.enabledConnections === 0)
          throw new Problem('organization.sso_requirement_unmet');
      }
      if (current.requireSso === requireSso) return { organizationId, requireSso, identitiesSignedOut: 0 };
      const now = this.deps.clock.now();
      await orgs.updateOrganization(trx, organizationId, {
        requireSso,
        // Strictly forward, even within one millisecond: the organization's ETag names one version.
        updatedAt: now > current.updatedAt ? now : new Date(new Date(current.updatedAt).getTime() + 1),
      });
      let identities = 0;
      if (requireSso) {
        // The domains' locks before the read of who holds an address there: an address of the
        // domains being confirmed at this moment is either read here or, committed after, sees the
        // requirement on and sweeps its own identity (lockSsoDomains).
        await lockSsoDomains(trx, await verifiedDomainsOf(trx, organizationId));
        const ids = await identitiesInDomains(trx, organizationId);
        const swept = await endSessionsUnderSso(trx, this.deps.events, actorName, ids, now);
        ended += swept.sessions;
        identities = swept.identities;
      }
      await organizationChanged(this.deps.events, trx, 'organization.updated', actorName, organizationId);
      await this.deps.audit.append(trx, {
        name: 'organization.sso_requirement.updated',
        actor: actorName,
        target: organizationId,
        outcome: 'success',
        details: { requireSso, identitiesSignedOut: identities, sessionsEnded: ended },
      });
      return { organizationId, requireSso, identitiesSignedOut: identities };
    });
    if (ended > 0) this.deps.signals.sessionsRevoked(SSO_REQUIRED_REASON, ended);
    return view;
  }

  /** The organization row locked, the member's permission checked after the lock. */
  async #locked(
    trx: Executor,
    actor: RequirementActor,
    organizationId: string,
  ): Promise<{ requireSso: boolean; updatedAt: Date }> {
    if (actor.kind === 'operator') {
      const row = await lockAnyOrganization(trx, organizationId);
      if (!row) throw new Problem('admin.organization_not_found');
      return row;
    }
    const row = await orgs.lockOrganization(trx, organizationId);
    if (!row) throw new Problem('organization.not_found');
    const role = await orgs.roleOf(trx, organizationId, actor.identityId);
    if (role === undefined) throw new Problem('organization.not_found');
    if (!this.#roles.can(role, CONNECTIONS_MANAGE)) throw new Problem('organization.permission_denied');
    return row;
  }
}
