import type { Executor } from '../../platform/db/database.js';

export interface ElevationRow {
  identityId: string;
  sessionId: string;
  expiresAt: Date;
  sessionRevokedAt: Date | null;
}

export async function insertElevation(
  trx: Executor,
  e: { tokenHash: string; identityId: string; sessionId: string; now: Date; expiresAt: Date },
): Promise<void> {
  await trx
    .insertInto('elevations')
    .values({
      token_hash: e.tokenHash,
      identity_id: e.identityId,
      session_id: e.sessionId,
      created_at: e.now,
      expires_at: e.expiresAt,
    })
    .execute();
}

/** The guard's read: one primary-key lookup joined to the session it is bound to. */
export function findElevation(trx: Executor, tokenHash: string): Promise<ElevationRow | undefined> {
  return trx
    .selectFrom('elevations as e')
    .innerJoin('sessions as s', 's.id', 'e.session_id')
    .select([
      'e.identity_id as identityId',
      'e.session_id as sessionId',
      'e.expires_at as expiresAt',
      's.revoked_at as sessionRevokedAt',
    ])
    .where('e.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Erasure: every elevation of the identity. */
export async function deleteIdentityElevations(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('elevations').where('identity_id', '=', identityId).execute();
}
