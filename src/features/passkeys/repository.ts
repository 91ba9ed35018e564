import { sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';

export type WebAuthnPurpose = 'registration' | 'sign_in' | 'step_up';

export interface PasskeyRow {
  id: string;
  identity_id: string;
  credential_id: string;
  public_key: Buffer;
  sign_count: number;
  transports: string[];
  backup_eligible: boolean;
  backed_up: boolean;
  label: string | null;
  created_at: Date;
  last_used_at: Date | null;
  removed_at: Date | null;
}

export async function insertChallenge(
  trx: Executor,
  c: {
    id: string;
    purpose: WebAuthnPurpose;
    hash: string;
    sessionId: string | null;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO webauthn_challenges (id, purpose, challenge_hash, session_id, created_at, expires_at)
    VALUES (${c.id}, ${c.purpose}, ${c.hash}, ${c.sessionId}, ${c.now}, ${c.expiresAt})`.execute(trx);
}

/**
 * Bounded clean-up with each issuance (sign-in options need no session, so nothing else bounds
 * the table). An expired challenge is refused like an unknown one, so deleting it changes no
 * answer. SKIP LOCKED: concurrent clean-ups never wait on each other.
 */
export async function pruneExpiredChallenges(trx: Executor, now: Date, batch = 100): Promise<void> {
  await sql`
    DELETE FROM webauthn_challenges WHERE id IN (
      SELECT id FROM webauthn_challenges WHERE expires_at <= ${now} ORDER BY expires_at LIMIT ${batch}
      FOR UPDATE SKIP LOCKED)`.execute(trx);
}

/**
 * Compare-and-set (concurrency guide): of every act presenting one challenge, exactly one spends
 * it; the others wait on the row lock, re-read it spent, and get false. The purpose and, for a
 * registration or step-up, the session must match, so a challenge never serves another act.
 */
export function spendChallenge(
  trx: Executor,
  c: { hash: string; purpose: WebAuthnPurpose; sessionId: string | null; now: Date },
): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE webauthn_challenges SET spent_at = ${c.now}
    WHERE challenge_hash = ${c.hash} AND purpose = ${c.purpose}
      AND session_id IS NOT DISTINCT FROM ${c.sessionId}
      AND spent_at IS NULL AND expires_at > ${c.now}
    RETURNING id`,
  );
}

export async function insertPasskey(
  trx: Executor,
  p: {
    id: string;
    identityId: string;
    credentialId: string;
    publicKey: Uint8Array;
    signCount: number;
    transports: string[];
    backupEligible: boolean;
    backedUp: boolean;
    aaguid: string;
    label: string | null;
    now: Date;
  },
): Promise<boolean> {
  // A credential already live (on this identity or another) is not registered twice.
  const r = await sql<{ id: string }>`
    INSERT INTO passkeys (id, identity_id, credential_id, public_key, sign_count, transports,
                          backup_eligible, backed_up, aaguid, label, created_at)
    VALUES (${p.id}, ${p.identityId}, ${p.credentialId}, ${Buffer.from(p.publicKey)}, ${p.signCount},
            ${p.transports}, ${p.backupEligible}, ${p.backedUp}, ${p.aaguid}, ${p.label}, ${p.now})
    ON CONFLICT (credential_id) WHERE removed_at IS NULL DO NOTHING
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

const COLUMNS = sql`id, identity_id, credential_id, public_key, sign_count, transports, backup_eligible,
  backed_up, label, created_at, last_used_at, removed_at`;

/** The identity's live passkeys, oldest first (excludeCredentials, the removal rule). */
export async function livePasskeys(trx: Executor, identityId: string): Promise<PasskeyRow[]> {
  const r = await sql<PasskeyRow>`
    SELECT ${COLUMNS} FROM passkeys
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

/** The newest row of a credential id, live or removed (a removed one is refused and recorded). */
export async function passkeyByCredential(
  trx: Executor,
  credentialId: string,
): Promise<PasskeyRow | undefined> {
  const r = await sql<PasskeyRow>`
    SELECT ${COLUMNS} FROM passkeys WHERE credential_id = ${credentialId}
    ORDER BY removed_at IS NULL DESC, created_at DESC LIMIT 1`.execute(trx);
  return r.rows[0];
}

/**
 * After a verified assertion, in the act's transaction (compare-and-set on the row): the counter
 * must move forward unless the passkey is backup-eligible (synced passkeys may report zero or an
 * older count) or both counts are zero (an authenticator without a counter); the backup state and
 * use time follow. False when the passkey was removed meanwhile or a concurrent use recorded the
 * same or a higher count first (a cloned authenticator).
 */
export function recordUse(
  trx: Executor,
  u: { id: string; signCount: number; backedUp: boolean; now: Date },
): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE passkeys SET sign_count = GREATEST(sign_count, ${u.signCount}), backed_up = ${u.backedUp},
      last_used_at = ${u.now}
    WHERE id = ${u.id} AND removed_at IS NULL
      AND (backup_eligible OR sign_count < ${u.signCount} OR (sign_count = 0 AND ${u.signCount}::bigint = 0))
    RETURNING id`,
  );
}

export function removePasskey(trx: Executor, id: string, identityId: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE passkeys SET removed_at = ${now}
    WHERE id = ${id} AND identity_id = ${identityId} AND removed_at IS NULL
    RETURNING id`,
  );
}

/**
 * Erasure: every passkey of the identity, removed ones too, and the WebAuthn challenges bound to
 * its sessions.
 */
export async function deleteIdentityPasskeys(trx: Executor, identityId: string): Promise<void> {
  await sql`
    DELETE FROM webauthn_challenges
    WHERE session_id IN (SELECT id FROM sessions WHERE identity_id = ${identityId})`.execute(trx);
  await sql`DELETE FROM passkeys WHERE identity_id = ${identityId}`.execute(trx);
}
