import type { Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { domainRequiresSso, identitiesInDomain } from '../organizations/sso-requirement/repository.js';
import {
  SSO_REQUIRED_REASON,
  type SsoDomainSweep,
  type SsoSweep,
} from '../organizations/sso-requirement/sweep.js';
import { sessionsEnded } from './events.js';
import { endAllSessionsListed } from './revocations.js';

/**
 * "Require SSO" ending sessions (docs/sso.md, "Require SSO"): the one revocation (./revocations.ts)
 * for each identity, in id order: the epoch moves on (its OpenID grants and any sign-in still
 * committing with the old epoch are dead), every live session is revoked with `sso_required`, one
 * `session.ended` each. The caller holds the domain locks of organizations/sso-requirement/repository.ts.
 */
export async function endSessionsUnderSso(
  trx: Executor,
  events: EventLog,
  actor: string | null,
  identityIds: readonly string[],
  now: Date,
): Promise<SsoSweep> {
  const ids = [...new Set(identityIds)].sort();
  let sessions = 0;
  for (const identityId of ids) {
    const revoked = await endAllSessionsListed(trx, identityId, SSO_REQUIRED_REASON, now);
    await sessionsEnded(events, trx, actor, identityId, revoked.live, SSO_REQUIRED_REASON);
    sessions += revoked.count;
  }
  return { identities: ids.length, sessions };
}

/** A domain just verified: when its organization requires SSO (in force), its people are swept. */
export function ssoDomainSweep(events: EventLog): SsoDomainSweep {
  return async (trx, { domain, actor, now }) => {
    if (!(await domainRequiresSso(trx, domain))) return { identities: 0, sessions: 0 };
    return endSessionsUnderSso(trx, events, actor, await identitiesInDomain(trx, domain), now);
  };
}
