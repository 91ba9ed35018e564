import { OPERATOR_ROLES } from '../../config/admin.js';

export type OperatorRole = (typeof OPERATOR_ROLES)[number];
export { OPERATOR_ROLES };

/**
 * What an admin route does, as a role sees it (docs/admin.md, "Operators"). Each route of the
 * admin listener names exactly one; the listener refuses to start with a route this table lacks
 * (admin-app.ts), so a new route cannot go unclassified, and test/admin/operator-roles.test.ts
 * walks every route against every role.
 */
export type OperatorPermission =
  | 'api:describe'
  | 'identities:read'
  | 'identities:unlock'
  | 'identities:end_sessions'
  | 'identities:disable'
  | 'identities:erase'
  | 'audit:read'
  | 'events:read'
  | 'organizations:read'
  | 'organizations:manage'
  | 'clients:read'
  | 'clients:manage'
  | 'webhooks:read'
  | 'webhooks:manage'
  | 'operators:read'
  | 'health:read'
  | 'operators:manage'
  | 'identities:import'
  | 'identities:export';

const READ: OperatorPermission[] = [
  'api:describe',
  'identities:read',
  'audit:read',
  'events:read',
  'organizations:read',
  'clients:read',
  'webhooks:read',
  'operators:read',
  // Readiness, key ages and queue depths: no person, no secret (docs/admin.md, "Health").
  'health:read',
];

/**
 * owner: everything. support: every read but the export, unlocking and ending sessions; no disabling or erasing,
 * no client, webhook, organization or operator management. auditor: the audit trail (each record
 * with its verification) and nothing else.
 */
export const ROLE_PERMISSIONS: Record<OperatorRole, ReadonlySet<OperatorPermission>> = {
  owner: new Set<OperatorPermission>([
    ...READ,
    'identities:unlock',
    'identities:end_sessions',
    'identities:disable',
    'identities:erase',
    'organizations:manage',
    'clients:manage',
    'webhooks:manage',
    'operators:manage',
    'identities:import',
    'identities:export',
  ]),
  support: new Set<OperatorPermission>([...READ, 'identities:unlock', 'identities:end_sessions']),
  auditor: new Set<OperatorPermission>(['api:describe', 'audit:read']),
};

const P = '/admin/v1';

/** Every route of the admin listener (`METHOD url` as Fastify names it) and its permission. */
export const ROUTE_PERMISSIONS: Readonly<Record<string, OperatorPermission>> = {
  [`GET ${P}/openapi.json`]: 'api:describe',
  [`GET ${P}/identities`]: 'identities:read',
  [`GET ${P}/identities/:id`]: 'identities:read',
  [`GET ${P}/identities/:id/sessions`]: 'identities:read',
  [`GET ${P}/identities/:id/organizations`]: 'identities:read',
  [`GET ${P}/identities/:id/connected-apps`]: 'identities:read',
  [`POST ${P}/identities/:id/disablements`]: 'identities:disable',
  [`POST ${P}/identities/:id/enablements`]: 'identities:disable',
  [`POST ${P}/identities/:id/lock-clearances`]: 'identities:unlock',
  [`POST ${P}/identities/:id/session-revocations`]: 'identities:end_sessions',
  [`POST ${P}/identities/:id/erasures`]: 'identities:erase',
  [`GET ${P}/audit-records`]: 'audit:read',
  [`GET ${P}/audit-records/stream`]: 'audit:read',
  [`POST ${P}/oidc-clients`]: 'clients:manage',
  [`GET ${P}/oidc-clients`]: 'clients:read',
  [`GET ${P}/oidc-clients/:clientId`]: 'clients:read',
  [`PATCH ${P}/oidc-clients/:clientId`]: 'clients:manage',
  [`DELETE ${P}/oidc-clients/:clientId`]: 'clients:manage',
  [`POST ${P}/oidc-clients/:clientId/secret-rotations`]: 'clients:manage',
  [`GET ${P}/organizations`]: 'organizations:read',
  [`POST ${P}/organizations`]: 'organizations:manage',
  [`GET ${P}/organizations/:id`]: 'organizations:read',
  [`PATCH ${P}/organizations/:id`]: 'organizations:manage',
  [`DELETE ${P}/organizations/:id`]: 'organizations:manage',
  [`POST ${P}/organizations/:id/disablements`]: 'organizations:manage',
  [`DELETE ${P}/organizations/:id/disablements`]: 'organizations:manage',
  [`GET ${P}/organizations/:id/members`]: 'organizations:read',
  [`PUT ${P}/organizations/:id/members/:identityId`]: 'organizations:manage',
  [`DELETE ${P}/organizations/:id/members/:identityId`]: 'organizations:manage',
  [`GET ${P}/organizations/:id/domains`]: 'organizations:read',
  [`POST ${P}/organizations/:id/domains/:domainId/verifications`]: 'organizations:manage',
  [`GET ${P}/organizations/:id/invitations`]: 'organizations:read',
  [`POST ${P}/organizations/:id/invitations`]: 'organizations:manage',
  [`DELETE ${P}/organizations/:id/invitations/:invitationId`]: 'organizations:manage',
  [`GET ${P}/organizations/:id/connections`]: 'organizations:read',
  [`POST ${P}/organizations/:id/connections`]: 'organizations:manage',
  [`PATCH ${P}/organizations/:id/connections/:connectionId`]: 'organizations:manage',
  [`DELETE ${P}/organizations/:id/connections/:connectionId`]: 'organizations:manage',
  [`POST ${P}/organizations/:id/connections/:connectionId/tests`]: 'organizations:manage',
  [`GET ${P}/connection-tests/:id`]: 'organizations:read',
  [`PUT ${P}/organizations/:id/sso-requirement`]: 'organizations:manage',
  [`GET ${P}/organizations/:id/scim-tokens`]: 'organizations:read',
  [`POST ${P}/organizations/:id/scim-tokens`]: 'organizations:manage',
  [`DELETE ${P}/organizations/:id/scim-tokens/:tokenId`]: 'organizations:manage',
  [`GET ${P}/events`]: 'events:read',
  [`GET ${P}/events/stream`]: 'events:read',
  [`GET ${P}/events/:id`]: 'events:read',
  [`GET ${P}/webhook-endpoints`]: 'webhooks:read',
  [`POST ${P}/webhook-endpoints`]: 'webhooks:manage',
  [`GET ${P}/webhook-endpoints/:id`]: 'webhooks:read',
  [`PATCH ${P}/webhook-endpoints/:id`]: 'webhooks:manage',
  [`DELETE ${P}/webhook-endpoints/:id`]: 'webhooks:manage',
  [`POST ${P}/webhook-endpoints/:id/disablements`]: 'webhooks:manage',
  [`DELETE ${P}/webhook-endpoints/:id/disablements`]: 'webhooks:manage',
  [`POST ${P}/webhook-endpoints/:id/secret-rotations`]: 'webhooks:manage',
  [`POST ${P}/webhook-endpoints/:id/deliveries/:deliveryId/resends`]: 'webhooks:manage',
  [`POST ${P}/webhook-endpoints/:id/recoveries`]: 'webhooks:manage',
  [`GET ${P}/webhook-endpoints/:id/deliveries`]: 'webhooks:read',
  [`GET ${P}/imports/schema`]: 'api:describe',
  [`POST ${P}/imports`]: 'identities:import',
  // Every identity with its password hash (and TOTP secrets when asked): the owner's alone.
  [`GET ${P}/exports/identities`]: 'identities:export',
  [`GET ${P}/health`]: 'health:read',
  [`GET ${P}/operators`]: 'operators:read',
  [`PUT ${P}/operators/:identityId`]: 'operators:manage',
  [`DELETE ${P}/operators/:identityId`]: 'operators:manage',
};

/** The permission of a route (`HEAD` is its `GET`'s); undefined for a route the table lacks. */
export function permissionOf(method: string, url: string): OperatorPermission | undefined {
  return ROUTE_PERMISSIONS[`${method === 'HEAD' ? 'GET' : method} ${url}`];
}

/** Whether `role` may call the route; an unknown role or route may not. */
export function roleAllows(role: string, method: string, url: string): boolean {
  const permission = permissionOf(method, url);
  const granted = (ROLE_PERMISSIONS as Record<string, ReadonlySet<OperatorPermission>>)[role];
  return permission !== undefined && granted !== undefined && granted.has(permission);
}
