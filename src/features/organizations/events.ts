import { iso } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { txtRecord } from './domains/dns.js';
import type { DomainRow } from './domains/repository.js';
import { invitationById } from './invitations/repository.js';
import { organizationDetail } from './operators/repository.js';
import { organizationDetailView } from './operators/view.js';

// The events of organizations, memberships and invitations (docs/events.md): each `data` is the
// object as the admin API shows it, read in the change's transaction after the change.

/** The organization as GET /admin/v1/organizations/{id} shows it, or null once it is gone. */
export async function organizationData(trx: Executor, organizationId: string) {
  const o = await organizationDetail(trx, organizationId);
  return o ? organizationDetailView(o) : null;
}

/** `organization.created` or `organization.updated`, with the organization as it is now. */
export async function organizationChanged(
  events: EventLog,
  trx: Executor,
  type: 'organization.created' | 'organization.updated',
  actor: string,
  organizationId: string,
): Promise<void> {
  const data = await organizationData(trx, organizationId);
  if (data) await events.append(trx, { type, actor, organizationId, data });
}

/** A membership created, updated (its role) or deleted. */
export function membershipChanged(
  events: EventLog,
  trx: Executor,
  type:
    | 'organization.membership.created'
    | 'organization.membership.updated'
    | 'organization.membership.deleted',
  actor: string,
  m: { organizationId: string; identityId: string; role: string | null },
) {
  return events.append(trx, {
    type,
    actor,
    identityId: m.identityId,
    organizationId: m.organizationId,
    data: { organizationId: m.organizationId, identityId: m.identityId, role: m.role },
  });
}

/** An invitation created, accepted or revoked, as it is now (its identifier unmasked, as operators see it). */
export async function invitationChanged(
  events: EventLog,
  trx: Executor,
  type:
    | 'organization.invitation.created'
    | 'organization.invitation.accepted'
    | 'organization.invitation.revoked',
  actor: string,
  invitationId: string,
): Promise<void> {
  const i = await invitationById(trx, invitationId);
  if (!i) return;
  await events.append(trx, {
    type,
    actor,
    identityId: i.acceptedBy,
    organizationId: i.organizationId,
    data: {
      id: i.id,
      organizationId: i.organizationId,
      identifierType: i.identifierType,
      identifier: i.identifier,
      role: i.role,
      invitedBy: i.invitedBy,
      createdAt: new Date(i.createdAt).toISOString(),
      expiresAt: new Date(i.expiresAt).toISOString(),
      acceptedAt: iso(i.acceptedAt),
      acceptedBy: i.acceptedBy,
      revokedAt: iso(i.revokedAt),
    },
  });
}

/** A domain as the member and admin routes show it (never anything secret: its token is published in DNS). */
export function domainView(d: DomainRow) {
  return {
    id: d.id,
    organizationId: d.organizationId,
    domain: d.domain,
    txtRecord: txtRecord(d.domain, d.token),
    createdAt: new Date(d.createdAt).toISOString(),
    verifiedAt: iso(d.verifiedAt),
    verifiedBy: d.verifiedBy,
    lastCheckedAt: iso(d.lastCheckedAt),
  };
}

/** A domain claimed, verified (by DNS or an operator) or removed, as it is now (or was). */
export function domainChanged(
  events: EventLog,
  trx: Executor,
  type: 'organization.domain.added' | 'organization.domain.verified' | 'organization.domain.removed',
  actor: string,
  d: DomainRow,
) {
  const { txtRecord: _published, ...data } = domainView(d);
  return events.append(trx, { type, actor, organizationId: d.organizationId, data });
}
