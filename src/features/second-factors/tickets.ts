import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database } from '../../platform/db/database.js';
import type { SecondFactorTicket } from '../sessions/service.js';
import { hasVerifiedFactor, insertTicket } from './repository.js';

/** 5 attempts per ticket (docs/api.md, "5. Sign in with the second step"). */
export const TICKET_ATTEMPTS = 5;

/** What issuing a second-factor ticket uses. */
export interface SecondFactorTicketDeps {
  database: Database;
  clock: Clock;
  config: Pick<Config, 'lifetimes'>;
}

/**
 * Issues a ticket when the identity holds an active (verified, not removed) second factor, else
 * null. Called only after the first proof succeeded. The ticket keeps the epoch read before that
 * proof, so a revocation committed in between makes the eventual session dead on arrival.
 */
export async function secondFactorTicketFor(
  deps: SecondFactorTicketDeps,
  identityId: string,
  epoch: number,
  primaryMethod: string,
): Promise<SecondFactorTicket | null> {
  const { db } = deps.database;
  if (!(await hasVerifiedFactor(db, identityId))) return null;
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.config.lifetimes.ticket * 1000);
  const ticket = opaqueToken();
  await insertTicket(db, {
    id: randomUUID(),
    hash: sha256Hex(ticket),
    identityId,
    epoch,
    primaryMethod,
    maxAttempts: TICKET_ATTEMPTS,
    now,
    expiresAt,
  });
  return {
    kind: 'second_factor_required',
    secondFactorTicket: ticket,
    ticketExpiresAt: expiresAt.toISOString(),
  };
}
