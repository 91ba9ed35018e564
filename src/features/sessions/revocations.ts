import type { Executor } from '../../platform/db/database.js';
import { sessionRequired } from '../../platform/http/problem.js';
import { bumpSessionEpoch, type IdentityRow } from '../identities/repository.js';
import { adoptEpoch, lockSession, type RevokedSessions, revokeIdentitySessions } from './repository.js';

/**
 * For a write that ends every other session (password change, sign-in method removal): locks the
 * caller's session after the identity row (the order every such write follows) and refuses with
 * 401 when it ended while the request waited; it is not revived here.
 */
export async function lockCallerSession(
  trx: Executor,
  identity: IdentityRow | undefined,
  sessionId: string,
): Promise<void> {
  const session = await lockSession(trx, sessionId);
  if (!identity || !session || session.revokedAt !== null || session.epoch !== identity.sessionEpoch) {
    throw sessionRequired();
  }
}

/**
 * Ends every session of the identity but the caller's: the epoch moves on (sign-ins still verifying
 * an old credential are dead on arrival), the caller's session alone adopts the new epoch, every
 * other live one is revoked with `reason`. Returns how many were revoked, and which were live
 * (the caller emits `session.ended` for each: ./events.ts).
 */
export async function endOtherSessions(
  trx: Executor,
  principal: { identityId: string; sessionId: string },
  reason: string,
  now: Date,
): Promise<RevokedSessions> {
  const epoch = await bumpSessionEpoch(trx, principal.identityId);
  await adoptEpoch(trx, principal.sessionId, epoch);
  return revokeIdentitySessions(trx, principal.identityId, reason, now, principal.sessionId);
}

/**
 * Ends every session of the identity, the caller's included (an operator's act): the epoch moves
 * first, so a sign-in still committing with the old one is dead on arrival, then every live
 * session is revoked with `reason`. The caller holds the identity row lock. Returns how many.
 */
export async function endAllSessions(
  trx: Executor,
  identityId: string,
  reason: string,
  now: Date,
): Promise<number> {
  return (await endAllSessionsListed(trx, identityId, reason, now)).count;
}

/** endAllSessions, telling which sessions were live (one `session.ended` each: ./events.ts). */
export async function endAllSessionsListed(
  trx: Executor,
  identityId: string,
  reason: string,
  now: Date,
): Promise<RevokedSessions> {
  await bumpSessionEpoch(trx, identityId);
  return revokeIdentitySessions(trx, identityId, reason, now);
}
