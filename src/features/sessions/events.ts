import type { Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';

/**
 * One `session.ended` per session an act ended while it was live (docs/events.md), in the act's
 * transaction: `{ id, identityId, reason }`, the reason as the session row records it. `actor` is
 * the person who ended them, null for the service (a replayed refresh token).
 */
export async function sessionsEnded(
  events: EventLog,
  trx: Executor,
  actor: string | null,
  identityId: string,
  sessionIds: readonly string[],
  reason: string,
): Promise<void> {
  for (const sessionId of sessionIds) {
    await events.append(trx, {
      type: 'session.ended',
      actor,
      identityId,
      sessionId,
      data: { id: sessionId, identityId, reason },
    });
  }
}
