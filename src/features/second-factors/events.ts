import { iso } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { factorById } from './repository.js';

/**
 * `identity.second_factor.added` (a confirmed enrolment) or `.removed` (docs/events.md), in the
 * change's transaction, with the factor as GET /admin/v1/identities/{id} shows it (never its secret).
 */
export async function secondFactorChanged(
  events: EventLog,
  trx: Executor,
  type: 'identity.second_factor.added' | 'identity.second_factor.removed',
  actor: string,
  factorId: string,
): Promise<void> {
  const f = await factorById(trx, factorId);
  if (!f) return;
  await events.append(trx, {
    type,
    actor,
    identityId: f.identityId,
    data: {
      id: f.id,
      identityId: f.identityId,
      type: 'totp',
      label: f.label,
      verifiedAt: new Date(f.verifiedAt).toISOString(),
      lastUsedAt: iso(f.lastUsedAt),
      removedAt: iso(f.revokedAt),
    },
  });
}
