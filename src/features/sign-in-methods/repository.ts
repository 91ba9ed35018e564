import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';
import type { IdentifierType, NormalisedIdentifier } from '../identities/identifier.js';

export interface MethodChallengeRow {
  id: string;
  code_hash: string;
  identifier_type: IdentifierType;
  identifier_value: string;
}

export interface MethodRow {
  id: string;
  kind: 'email' | 'phone' | 'password' | 'provider';
  /** Identifier value (unmasked, masked by the service) or provider name; null for the password. */
  detail: string | null;
  verified_at: Date;
  last_used_at: Date | null;
}

export interface LinkRow {
  id: string;
  provider: string;
}

/**
 * A challenge to add an address: it names the address, and no identifiers row exists until the
 * code is confirmed (migration 0006 explains why).
 */
export async function insertMethodChallenge(
  trx: Executor,
  c: {
    id: string;
    identityId: string;
    identifier: NormalisedIdentifier;
    codeHash: string;
    maxAttempts: number;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    INSERT INTO challenges
      (id, identity_id, purpose, code_hash, attempts, max_attempts, created_at, expires_at,
       identifier_type, identifier_value)
    VALUES
      (${c.id}, ${c.identityId}, 'sign_in_method', ${c.codeHash}, 0, ${c.maxAttempts}, ${c.now},
       ${c.expiresAt}, ${c.identifier.type}, ${c.identifier.value})`.execute(trx);
}

/** Once an address is added, the identity's other pending challenges for it are moot. */
export async function revokeMethodChallengesFor(
  trx: Executor,
  identityId: string,
  identifier: NormalisedIdentifier,
  now: Date,
): Promise<void> {
  await sql`
    UPDATE challenges SET revoked_at = ${now}
    WHERE identity_id = ${identityId} AND purpose = 'sign_in_method'
      AND identifier_type = ${identifier.type} AND identifier_value = ${identifier.value}
      AND spent_at IS NULL AND revoked_at IS NULL`.execute(trx);
}

/**
 * A pending (never confirmed) registration loses the address to the identity that proved it from a
 * session; its live codes die with it. False when the row was verified or removed meanwhile.
 */
export async function retirePendingIdentifier(
  trx: Executor,
  identifierId: string,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE identifiers SET removed_at = ${now}
    WHERE id = ${identifierId} AND verified_at IS NULL AND removed_at IS NULL
    RETURNING id`.execute(trx);
  if (r.rows.length !== 1) return false;
  await revokeIdentifierChallenges(trx, identifierId, now);
  return true;
}

export async function markOwnIdentifierVerified(
  trx: Executor,
  identifierId: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE identifiers SET verified_at = ${now}
    WHERE id = ${identifierId} AND identity_id = ${identityId} AND verified_at IS NULL AND removed_at IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

/** The unique index on live addresses decides: undefined when another claim holds the address. */
export async function insertVerifiedIdentifier(
  trx: Executor,
  row: { id: string; identityId: string; identifier: NormalisedIdentifier; now: Date },
): Promise<string | undefined> {
  const r = await sql<{ id: string }>`
    INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
    VALUES (${row.id}, ${row.identityId}, ${row.identifier.type}, ${row.identifier.value}, ${row.now}, ${row.now})
    ON CONFLICT (type, value) WHERE removed_at IS NULL DO NOTHING
    RETURNING id`.execute(trx);
  return r.rows[0]?.id;
}

export async function liveLinks(trx: Executor, identityId: string): Promise<LinkRow[]> {
  const r = await sql<LinkRow>`
    SELECT id, provider FROM provider_links
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

export async function removeIdentifier(
  trx: Executor,
  identifierId: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE identifiers SET removed_at = ${now}
    WHERE id = ${identifierId} AND identity_id = ${identityId} AND removed_at IS NULL
    RETURNING id`.execute(trx);
  if (r.rows.length !== 1) return false;
  // A code in flight to a removed address (step-up, recovery) must not answer for it any more.
  await revokeIdentifierChallenges(trx, identifierId, now);
  return true;
}

async function revokeIdentifierChallenges(trx: Executor, identifierId: string, now: Date): Promise<void> {
  await sql`
    UPDATE challenges SET revoked_at = ${now}
    WHERE identifier_id = ${identifierId} AND spent_at IS NULL AND revoked_at IS NULL`.execute(trx);
}

export async function removeLink(
  trx: Executor,
  linkId: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE provider_links SET removed_at = ${now}
    WHERE id = ${linkId} AND identity_id = ${identityId} AND removed_at IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

export async function removePassword(trx: Executor, identityId: string, now: Date): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE identities SET password_hash = NULL, password_changed_at = ${now}
    WHERE id = ${identityId} AND password_hash IS NOT NULL
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

/**
 * Every verified method of an identity, newest first with the id as unique tiebreak: verified
 * identifiers, the password (under its derived id; last used = its latest successful sign-in) and
 * live provider links. `after` is the last row of the previous page.
 */
export async function methodsPage(
  trx: Executor,
  identityId: string,
  passwordId: string,
  limit: number,
  after?: { t: string; id: string },
): Promise<MethodRow[]> {
  const position = after
    ? sql`WHERE (m.verified_at, m.id) < (${new Date(after.t)}, ${after.id}::uuid)`
    : sql``;
  const r = await sql<MethodRow>`
    SELECT m.id, m.kind, m.detail, m.verified_at, m.last_used_at FROM (
      SELECT f.id, f.type AS kind, f.value AS detail, f.verified_at, f.last_used_at
      FROM identifiers f
      WHERE f.identity_id = ${identityId} AND f.verified_at IS NOT NULL AND f.removed_at IS NULL
      UNION ALL
      SELECT ${passwordId}::uuid, 'password', NULL, COALESCE(i.password_changed_at, i.created_at),
        (SELECT max(a.occurred_at) FROM sign_in_attempts a
         WHERE a.identity_id = i.id AND a.method = 'password' AND a.outcome = 'succeeded')
      FROM identities i WHERE i.id = ${identityId} AND i.password_hash IS NOT NULL
      UNION ALL
      SELECT l.id, 'provider', l.provider, l.created_at, l.last_used_at
      FROM provider_links l WHERE l.identity_id = ${identityId} AND l.removed_at IS NULL
    ) m
    ${position}
    ORDER BY m.verified_at DESC, m.id DESC LIMIT ${limit + 1}`.execute(trx);
  return r.rows;
}
