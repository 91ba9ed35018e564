import { iso } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { passkeyById } from './repository.js';

/**
 * `identity.passkey.added` or `.removed` (docs/events.md), in the change's transaction, with the
 * passkey as it is now: never its credential id or public key (nothing an application needs).
 */
export async function passkeyChanged(
  events: EventLog,
  trx: Executor,
  type: 'identity.passkey.added' | 'identity.passkey.removed',
  actor: string,
  passkeyId: string,
): Promise<void> {
  const p = await passkeyById(trx, passkeyId);
  if (!p) return;
  await events.append(trx, {
    type,
    actor,
    identityId: p.identityId,
    data: {
      id: p.id,
      identityId: p.identityId,
      label: p.label,
      backupEligible: p.backupEligible,
      backedUp: p.backedUp,
      createdAt: new Date(p.createdAt).toISOString(),
      lastUsedAt: iso(p.lastUsedAt),
      removedAt: iso(p.removedAt),
    },
  });
}
