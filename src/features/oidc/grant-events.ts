import { iso } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { grantById } from './repository.js';

// The events of the OpenID Provider's grants (docs/events.md): `data` is the grant's link as it
// is after the change, read in the change's transaction. Never a token, a code or the grant's
// payload (what the library stores of it).

/** `oidc.grant.created` or `oidc.grant.revoked` for one grant, appended in `trx`. */
export async function grantChanged(
  events: EventLog,
  trx: Executor,
  type: 'oidc.grant.created' | 'oidc.grant.revoked',
  actor: string | null,
  grantId: string,
): Promise<void> {
  const g = await grantById(trx, grantId);
  if (!g) return;
  await events.append(trx, {
    type,
    actor,
    identityId: g.identityId,
    sessionId: g.sessionId,
    data: {
      id: g.id,
      clientId: g.clientId,
      identityId: g.identityId,
      scope: g.scope,
      offline: g.offline,
      createdAt: iso(g.createdAt),
      endedAt: iso(g.endedAt),
      endedReason: g.endedReason,
    },
  });
}
