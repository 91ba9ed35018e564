import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';
import type { IdentifierType } from '../identities/identifier.js';

export interface SignUpChallengeRow {
  id: string;
  identity_id: string;
  code_hash: string;
  password_hash: string;
  expires_at: Date;
  attempts: number;
  max_attempts: number;
}

export async function insertIdentity(
  trx: Executor,
  identity: { id: string; createdAt: Date },
): Promise<void> {
  await sql`INSERT INTO identities (id, created_at) VALUES (${identity.id}, ${identity.createdAt})`.execute(
    trx,
  );
}

/** Only for an identity this transaction created and that lost the race for its identifier. */
export async function deleteIdentity(trx: Executor, id: string): Promise<void> {
  await sql`DELETE FROM identities WHERE id = ${id}`.execute(trx);
}

/**
 * Claims a normalised address for an identity. The partial unique index decides between concurrent
 * claims: a loser waits for the winner's commit and gets no row back (undefined), never an error,
 * so it can go on to read the winner's row in the same transaction.
 */
export async function claimIdentifier(
  trx: Executor,
  row: { id: string; identityId: string; type: IdentifierType; value: string; createdAt: Date },
): Promise<string | undefined> {
  const r = await sql<{ id: string }>`
    INSERT INTO identifiers (id, identity_id, type, value, created_at)
    VALUES (${row.id}, ${row.identityId}, ${row.type}, ${row.value}, ${row.createdAt})
    ON CONFLICT (type, value) WHERE removed_at IS NULL DO NOTHING
    RETURNING id`.execute(trx);
  return r.rows[0]?.id;
}

export async function insertSignUpChallenge(
  trx: Executor,
  c: {
    id: string;
    identityId: string;
    identifierId: string;
    codeHash: string;
    passwordHash: string;
    maxAttempts: number;
    createdAt: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO challenges
      (id, identity_id, identifier_id, purpose, code_hash, password_hash, attempts, max_attempts, created_at, expires_at)
    VALUES
      (${c.id}, ${c.identityId}, ${c.identifierId}, 'sign_up', ${c.codeHash}, ${c.passwordHash}, 0,
       ${c.maxAttempts}, ${c.createdAt}, ${c.expiresAt})`.execute(trx);
}

/** False when the identifier was verified or removed meanwhile: the confirmation must not proceed. */
export async function markIdentifierVerified(
  trx: Executor,
  identifierId: string,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE identifiers SET verified_at = ${now}
    WHERE id = ${identifierId} AND verified_at IS NULL AND removed_at IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

/** Fills a pending identity's password; false when the identity already has one. */
export async function setIdentityPassword(
  trx: Executor,
  identityId: string,
  passwordHash: string,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE identities SET password_hash = ${passwordHash}, password_changed_at = ${now}
    WHERE id = ${identityId} AND password_hash IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

/** Contract 3a: once one registration is confirmed, nobody else's pending password can claim the address. */
export async function revokeOtherSignUpChallenges(
  trx: Executor,
  identifierId: string,
  keepId: string,
  now: Date,
): Promise<number> {
  const r = await sql<{ id: string }>`
    UPDATE challenges SET revoked_at = ${now}
    WHERE identifier_id = ${identifierId} AND purpose = 'sign_up' AND id <> ${keepId}
      AND spent_at IS NULL AND revoked_at IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length;
}
