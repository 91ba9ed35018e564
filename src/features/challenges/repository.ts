import { type RawBuilder, sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { IdentifierType, NormalisedIdentifier } from '../identities/identifier.js';

export type ChallengePurpose = 'sign_up' | 'sign_in_method' | 'password_recovery' | 'step_up';
export type StepUpChannel = 'second_factor' | 'identifier' | 'recovery_code';

/** One row type for every purpose; the columns a purpose does not use are null (migration 0007). */
export interface ChallengeRow {
  id: string;
  identity_id: string;
  /** The address the code went to (sign-up, recovery, step-up by identifier). */
  identifier_id: string | null;
  /** Step-up only: the session that started it. */
  session_id: string | null;
  purpose: ChallengePurpose;
  channel: StepUpChannel | null;
  /** Keyed hash of the code; null only for a step-up answered by the authenticator. */
  code_hash: string | null;
  /** Sign-up only: the password sent with this registration (contract 3a). */
  password_hash: string | null;
  /** Sign-in method only: the address the code will add once confirmed. */
  identifier_type: IdentifierType | null;
  identifier_value: string | null;
  attempts: number;
  max_attempts: number;
  expires_at: Date;
  spent_at: Date | null;
  revoked_at: Date | null;
}

export interface NewChallenge {
  id: string;
  identityId: string;
  purpose: ChallengePurpose;
  codeHash: string | null;
  maxAttempts: number;
  now: Date;
  expiresAt: Date;
  identifierId?: string;
  sessionId?: string;
  channel?: StepUpChannel;
  passwordHash?: string;
  address?: NormalisedIdentifier;
}

/** Whose challenges: an identifier's (sign-up, recovery) or an identity's (sign-in methods). */
export type ChallengeOwner = { identifierId: string } | { identityId: string };

/** Which live challenges a revocation retires. */
export type RevocationScope =
  /** Everything sent to an address (it was removed or retired), or one purpose of it but one. */
  | { identifierId: string; purpose?: ChallengePurpose; exceptId?: string }
  /** One purpose of an identity, optionally only those naming an address to add. */
  | { identityId: string; purpose: ChallengePurpose; address?: NormalisedIdentifier }
  /** A session's step-ups: only the newest can be answered. */
  | { sessionId: string };

const COLUMNS = sql`id, identity_id, identifier_id, session_id, purpose, channel, code_hash, password_hash,
  identifier_type, identifier_value, attempts, max_attempts, expires_at, spent_at, revoked_at`;

function ownedBy(owner: ChallengeOwner): RawBuilder<unknown> {
  return 'identifierId' in owner
    ? sql`identifier_id = ${owner.identifierId}`
    : sql`identity_id = ${owner.identityId}`;
}

/** Answerable at `now`: the one definition of a live challenge, shared by every statement below. */
function answerable(now: Date): RawBuilder<unknown> {
  return sql`spent_at IS NULL AND revoked_at IS NULL AND expires_at > ${now} AND attempts < max_attempts`;
}

export async function insertChallenge(trx: Executor, c: NewChallenge): Promise<void> {
  await sql`
    INSERT INTO challenges
      (id, identity_id, identifier_id, session_id, purpose, channel, code_hash, password_hash,
       identifier_type, identifier_value, attempts, max_attempts, created_at, expires_at)
    VALUES
      (${c.id}, ${c.identityId}, ${c.identifierId ?? null}, ${c.sessionId ?? null}, ${c.purpose},
       ${c.channel ?? null}, ${c.codeHash}, ${c.passwordHash ?? null}, ${c.address?.type ?? null},
       ${c.address?.value ?? null}, 0, ${c.maxAttempts}, ${c.now}, ${c.expiresAt})`.execute(trx);
}

export async function findChallenge(trx: Executor, id: string): Promise<ChallengeRow | undefined> {
  const r = await sql<ChallengeRow>`SELECT ${COLUMNS} FROM challenges WHERE id = ${id}`.execute(trx);
  return r.rows[0];
}

/** The owner's challenges of one purpose that could still be answered at `now`, oldest first. */
export async function liveChallenges(
  trx: Executor,
  purpose: ChallengePurpose,
  owner: ChallengeOwner,
  now: Date,
): Promise<ChallengeRow[]> {
  const r = await sql<ChallengeRow>`
    SELECT ${COLUMNS} FROM challenges
    WHERE ${ownedBy(owner)} AND purpose = ${purpose} AND ${answerable(now)}
    ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

/**
 * Compare-and-set: spends the challenge only while it is still answerable at `now`, so of two
 * requests racing with one code exactly one gets true.
 */
export function spendChallenge(trx: Executor, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`UPDATE challenges SET spent_at = ${now} WHERE id = ${id} AND ${answerable(now)} RETURNING id`,
  );
}

/** One attempt charged on one challenge while it is answerable; false once it no longer is. */
export function chargeChallenge(trx: Executor, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`UPDATE challenges SET attempts = attempts + 1 WHERE id = ${id} AND ${answerable(now)} RETURNING id`,
  );
}

/** A failed answer costs one attempt on every live challenge of the owner for that purpose. */
export async function chargeLiveChallenges(
  trx: Executor,
  purpose: ChallengePurpose,
  owner: ChallengeOwner,
  now: Date,
): Promise<number> {
  const r = await sql<{ id: string }>`
    UPDATE challenges SET attempts = attempts + 1
    WHERE ${ownedBy(owner)} AND purpose = ${purpose} AND ${answerable(now)}
    RETURNING id`.execute(trx);
  return r.rows.length;
}

export async function revokeChallenges(trx: Executor, scope: RevocationScope, now: Date): Promise<number> {
  let where: RawBuilder<unknown>;
  if ('sessionId' in scope) {
    where = sql`session_id = ${scope.sessionId}`;
  } else if ('identifierId' in scope) {
    where = sql`identifier_id = ${scope.identifierId}`;
    if (scope.purpose) where = sql`${where} AND purpose = ${scope.purpose}`;
    if (scope.exceptId) where = sql`${where} AND id <> ${scope.exceptId}`;
  } else {
    where = sql`identity_id = ${scope.identityId} AND purpose = ${scope.purpose}`;
    if (scope.address) {
      where = sql`${where} AND identifier_type = ${scope.address.type} AND identifier_value = ${scope.address.value}`;
    }
  }
  const r = await sql<{ id: string }>`
    UPDATE challenges SET revoked_at = ${now}
    WHERE ${where} AND spent_at IS NULL AND revoked_at IS NULL
    RETURNING id`.execute(trx);
  return r.rows.length;
}

/**
 * Erasure: every challenge of the identity, every challenge sent to one of its identifiers, and
 * every other identity's pending challenge naming one of its addresses (they hold the address and,
 * for sign-ups, a password hash). Runs before the identifiers are deleted (foreign key).
 */
export async function deleteIdentityChallenges(trx: Executor, identityId: string): Promise<number> {
  const r = await sql`
    DELETE FROM challenges c
    WHERE c.identity_id = ${identityId}
       OR c.identifier_id IN (SELECT id FROM identifiers WHERE identity_id = ${identityId})
       OR (c.identifier_type, c.identifier_value) IN
          (SELECT type, value FROM identifiers WHERE identity_id = ${identityId})
    RETURNING c.id`.execute(trx);
  return r.rows.length;
}
