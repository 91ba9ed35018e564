import { iso } from '../../../platform/clock.js';
import type { EndpointRow } from './repository.js';

/**
 * An endpoint as the admin API shows it, and as the `webhook_endpoint.disabled` event carries it:
 * never its secret or private key.
 */
export function endpointView(e: EndpointRow) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes,
    organizationId: e.organizationId,
    ed25519PublicKey: e.ed25519PublicKey,
    previousSecretUntil: iso(e.previousSecretUntil),
    disabledAt: iso(e.disabledAt),
    disabledReason: e.disabledReason,
    failingSince: iso(e.failingSince),
    createdAt: new Date(e.createdAt).toISOString(),
    updatedAt: new Date(e.updatedAt).toISOString(),
  };
}
