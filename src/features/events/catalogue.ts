/**
 * The event types (docs/events.md, "Catalogue"). `EMITTED` names those some path emits today;
 * the others are reserved: a webhook endpoint may already filter on them.
 */
export const EVENT_TYPES = [
  'identity.created',
  'identity.updated',
  'identity.disabled',
  'identity.enabled',
  'identity.erased',
  'identity.password_changed',
  'identity.second_factor.added',
  'identity.second_factor.removed',
  'identity.passkey.added',
  'identity.passkey.removed',
  'identity.locked',
  'identity.unlocked',
  'session.created',
  'session.ended',
  'organization.created',
  'organization.updated',
  'organization.deleted',
  'organization.membership.created',
  'organization.membership.updated',
  'organization.membership.deleted',
  'organization.invitation.created',
  'organization.invitation.accepted',
  'organization.invitation.revoked',
  'oidc.grant.created',
  'oidc.grant.revoked',
  'signing_key.rotated',
  'webhook_endpoint.disabled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The types some path emits now (the others follow: issue 44). */
export const EMITTED: ReadonlySet<EventType> = new Set<EventType>([
  'identity.disabled',
  'identity.enabled',
  'identity.erased',
  'identity.unlocked',
  'session.created',
  'session.ended',
  'organization.created',
  'organization.updated',
  'organization.deleted',
  'organization.membership.created',
  'organization.membership.updated',
  'organization.membership.deleted',
  'organization.invitation.created',
  'organization.invitation.accepted',
  'organization.invitation.revoked',
  'webhook_endpoint.disabled',
]);
