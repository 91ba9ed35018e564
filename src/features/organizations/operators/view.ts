import { iso } from '../../../platform/clock.js';
import type { AdminOrganizationRow } from './repository.js';

/** An organization as the admin API lists it. */
export function organizationItem(o: AdminOrganizationRow) {
  return {
    id: o.id,
    name: o.name,
    slug: o.slug,
    requireSecondFactor: o.requireSecondFactor,
    requireSso: o.requireSso,
    createdBy: o.createdBy,
    createdAt: new Date(o.createdAt).toISOString(),
    updatedAt: new Date(o.updatedAt).toISOString(),
    disabledAt: iso(o.disabledAt),
  };
}

/**
 * An organization as GET /admin/v1/organizations/{id} shows it (and its events carry it): the
 * listed fields and its member and owner counts.
 */
export function organizationDetailView(o: AdminOrganizationRow & { members: number; owners: number }) {
  return { ...organizationItem(o), memberCount: o.members, ownerCount: o.owners };
}
