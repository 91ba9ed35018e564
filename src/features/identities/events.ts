import { iso } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { EventType } from '../events/catalogue.js';
import type { EventLog } from '../events/log.js';
import { profileJson } from './profile.js';
import { type IdentityListRow, identityListed } from './repository.js';

// The events about an identity as a whole (docs/events.md): `data` is the identity as
// GET /admin/v1/identities lists it, read in the change's transaction after the change; never a
// password, hash, code or token.

/** The identity as the admin API lists it (GET /admin/v1/identities), from its row. */
export function identityJson(row: IdentityListRow) {
  return {
    id: row.id,
    createdAt: new Date(row.createdAt).toISOString(),
    locale: row.locale,
    ...profileJson(row),
    identifiers: row.identifiers.map((f) => ({
      id: f.id,
      type: f.type,
      value: f.value,
      verifiedAt: iso(f.verifiedAt),
    })),
    disabledAt: iso(row.disabledAt),
    erasedAt: iso(row.erasedAt),
  };
}

/** The identity events a person's (or the service's) act emits with the identity as its data. */
export type IdentityEventType = Extract<
  EventType,
  'identity.created' | 'identity.updated' | 'identity.password_changed' | 'identity.locked'
>;

/**
 * Appends `type` about the identity, as it is now, in the change's transaction. `extra` adds the
 * few facts the identity object does not show (how a password changed, why a lock tripped).
 */
export async function identityChanged(
  events: EventLog,
  trx: Executor,
  type: IdentityEventType,
  actor: string | null,
  identityId: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const row = await identityListed(trx, identityId);
  if (!row) return;
  await events.append(trx, { type, actor, identityId, data: { ...identityJson(row), ...extra } });
}
