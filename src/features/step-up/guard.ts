import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../platform/context.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Executor } from '../../platform/db/database.js';
import { Problem } from '../../platform/http/problem.js';
import { principalOf } from '../sessions/guard.js';
import { findElevation, insertElevation } from './repository.js';

export const ELEVATION_HEADER = 'x-elevation-token';

// An elevation token is 32 random bytes in base64url (43 characters); anything far longer is
// refused without hashing it.
const MAX_ELEVATION_TOKEN = 256;

export interface Elevation {
  elevationToken: string;
  /** ISO 8601 instant. */
  elevationExpiresAt: string;
}

/**
 * Mints an elevation for one session of one identity, inside the caller's transaction (so a
 * provider step-up spends its nonce and mints in one commit). Opaque 256-bit value; only its
 * SHA-256 is stored. It can be presented for several writes until it expires or its session ends.
 */
export async function mintElevation(
  trx: Executor,
  ctx: AppContext,
  target: { identityId: string; sessionId: string },
): Promise<Elevation> {
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + ctx.config.lifetimes.elevation * 1000);
  const token = opaqueToken();
  await insertElevation(trx, {
    tokenHash: sha256Hex(token),
    identityId: target.identityId,
    sessionId: target.sessionId,
    now,
    expiresAt,
  });
  return { elevationToken: token, elevationExpiresAt: expiresAt.toISOString() };
}

/**
 * Interface 5.3: runs after requireSession (a dead session has already answered 401). A missing,
 * unknown or expired elevation, one minted for another session or identity, and one whose session
 * has ended all get the identical 403 identity.elevation_required.
 */
export function requireElevation(ctx: AppContext) {
  return async function elevationGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = principalOf(request);
    const header = request.headers[ELEVATION_HEADER];
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_ELEVATION_TOKEN) {
      throw new Problem('identity.elevation_required');
    }
    const row = await findElevation(ctx.database.db, sha256Hex(header));
    if (
      !row ||
      row.session_id !== principal.sessionId ||
      row.identity_id !== principal.identityId ||
      row.session_revoked_at !== null ||
      new Date(row.expires_at) <= ctx.clock.now()
    ) {
      throw new Problem('identity.elevation_required');
    }
  };
}
