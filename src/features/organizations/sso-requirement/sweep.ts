import { sql } from 'kysely';
import type { Executor } from '../../../platform/db/database.js';
import type { EventLog } from '../../events/log.js';
import { sessionsEnded } from '../../sessions/events.js';
import { endAllSessionsListed } from '../../sessions/revocations.js';

/** The session-revocation reason of every session "require SSO" ends. */
export const SSO_REQUIRED_REASON = 'sso_required';

// The advisory-lock class of "require SSO"'s domains (any fixed 32-bit number; the second key is
// the domain's hashtext: two domains sharing a hash only serialise a little more).
const DOMAIN_LOCK_CLASS = 4_705;

/** The domain part of a normalised email address. */
export function emailDomain(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

/**
 * The lock that serialises, per email domain, everything that can put an identity under "require
 * SSO" (docs/decisions.md, "Require SSO: sessions swept on a new domain or address"): turning the
 * requirement on (each of the organization's verified domains), a domain becoming verified, and an
 * address of the domain becoming verified. Each of them reads the others' writes only after this
 * lock, so of two at once the second sees the first's commit and sweeps what the first could not.
 * Transaction-scoped; taken in a fixed order, and always before any identity row is locked.
 */
export async function lockSsoDomains(trx: Executor, domains: readonly string[]): Promise<void> {
  for (const domain of [...new Set(domains)].sort()) {
    await sql`SELECT pg_advisory_xact_lock(${sql.lit(DOMAIN_LOCK_CLASS)}, hashtext(${domain}))`.execute(trx);
  }
}

/** What a sweep ended: identities signed out, sessions revoked. */
export interface SsoSweep {
  identities: number;
  sessions: number;
}

/**
 * The one revocation (sessions/revocations.ts) for each identity, in id order: the epoch moves on
 * (its OpenID grants and any sign-in still committing with the old epoch are dead), every live
 * session is revoked with `sso_required`, one `session.ended` each.
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
