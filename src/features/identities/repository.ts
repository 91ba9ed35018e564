import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';
import type { NormalisedIdentifier } from './identifier.js';

export interface IdentifierRow {
  id: string;
  identity_id: string;
  type: 'email' | 'phone';
  value: string;
  verified_at: Date | null;
}

export interface IdentityRow {
  id: string;
  password_hash: string | null;
  session_epoch: number;
  failed_attempts: number;
  locked_until: Date | null;
}

/** The live (not removed) identifier row for a normalised address, whoever owns it. */
export async function findIdentifier(
  trx: Executor,
  ident: NormalisedIdentifier,
): Promise<IdentifierRow | undefined> {
  const r = await sql<IdentifierRow>`
    SELECT id, identity_id, type, value, verified_at FROM identifiers
    WHERE type = ${ident.type} AND value = ${ident.value} AND removed_at IS NULL`.execute(trx);
  return r.rows[0];
}

export async function findIdentity(
  trx: Executor,
  id: string,
  forUpdate = false,
): Promise<IdentityRow | undefined> {
  const r = forUpdate
    ? await sql<IdentityRow>`
        SELECT id, password_hash, session_epoch, failed_attempts, locked_until FROM identities WHERE id = ${id} FOR UPDATE`.execute(
        trx,
      )
    : await sql<IdentityRow>`
        SELECT id, password_hash, session_epoch, failed_attempts, locked_until FROM identities WHERE id = ${id}`.execute(
        trx,
      );
  return r.rows[0];
}

export async function verifiedIdentifiers(trx: Executor, identityId: string): Promise<IdentifierRow[]> {
  const r = await sql<IdentifierRow>`
    SELECT id, identity_id, type, value, verified_at FROM identifiers
    WHERE identity_id = ${identityId} AND verified_at IS NOT NULL AND removed_at IS NULL
    ORDER BY verified_at, id`.execute(trx);
  return r.rows;
}

/**
 * Ends every session of an identity that was issued before now: bumping the epoch kills sessions
 * still committing with the old one (concurrency guide: sign-out everywhere vs in-flight sign-ins).
 */
export async function bumpSessionEpoch(trx: Executor, identityId: string): Promise<number> {
  const r = await sql<{ session_epoch: number }>`
    UPDATE identities SET session_epoch = session_epoch + 1 WHERE id = ${identityId} RETURNING session_epoch`.execute(
    trx,
  );
  return r.rows[0].session_epoch;
}

export interface IdentitySummary {
  identifiers: IdentifierRow[];
  /** The ways the identity can prove itself (contract 3), in a fixed order. */
  methods: string[];
}

export interface SummaryColumns {
  has_password: boolean;
  second_factor: boolean;
  provider: boolean;
  identifiers: { id: string; type: 'email' | 'phone'; value: string; verified_at: string }[];
}

/**
 * The columns of an identity summary, for a query where `i` is the identities row: verified
 * identifiers and active methods come back with whatever else that query reads, in one round trip
 * (the session context is on the hot path). Each feature that adds a kind of method adds its
 * clause here.
 */
export const summaryColumns = sql`
  i.password_hash IS NOT NULL AS has_password,
  EXISTS (SELECT 1 FROM second_factors t WHERE t.identity_id = i.id
          AND t.verified_at IS NOT NULL AND t.revoked_at IS NULL) AS second_factor,
  EXISTS (SELECT 1 FROM provider_links l WHERE l.identity_id = i.id AND l.removed_at IS NULL) AS provider,
  COALESCE((SELECT json_agg(json_build_object('id', f.id, 'type', f.type, 'value', f.value,
                                              'verified_at', f.verified_at) ORDER BY f.verified_at, f.id)
            FROM identifiers f
            WHERE f.identity_id = i.id AND f.verified_at IS NOT NULL AND f.removed_at IS NULL),
           '[]'::json) AS identifiers`;

export function toSummary(identityId: string, row: SummaryColumns): IdentitySummary {
  const identifiers = row.identifiers.map((f) => ({
    id: f.id,
    identity_id: identityId,
    type: f.type,
    value: f.value,
    verified_at: new Date(f.verified_at),
  }));
  const methods: string[] = [];
  if (row.has_password) methods.push('password');
  if (identifiers.some((f) => f.type === 'email')) methods.push('email');
  if (identifiers.some((f) => f.type === 'phone')) methods.push('phone');
  if (row.provider) methods.push('provider');
  if (row.second_factor) methods.push('second_factor');
  return { identifiers, methods };
}

export async function identitySummary(trx: Executor, identityId: string): Promise<IdentitySummary> {
  const r =
    await sql<SummaryColumns>`SELECT ${summaryColumns} FROM identities i WHERE i.id = ${identityId}`.execute(
      trx,
    );
  return r.rows[0] ? toSummary(identityId, r.rows[0]) : { identifiers: [], methods: [] };
}

export type ChallengePurpose = 'sign_up' | 'sign_in_method' | 'password_recovery' | 'step_up';

/**
 * Compare-and-set on an out-of-band challenge: spends it only while it is still answerable at
 * `now`, so of two requests racing with one code exactly one gets true.
 */
export async function spendChallenge(
  trx: Executor,
  id: string,
  purpose: ChallengePurpose,
  now: Date,
): Promise<boolean> {
  const r = await sql<{ id: string }>`
    UPDATE challenges SET spent_at = ${now}
    WHERE id = ${id} AND purpose = ${purpose} AND spent_at IS NULL AND revoked_at IS NULL
      AND expires_at > ${now} AND attempts < max_attempts
    RETURNING id`.execute(trx);
  return r.rows.length === 1;
}

/** Whose challenges: an identifier's (sign-up, recovery) or an identity's (sign-in methods). */
export type ChallengeOwner = { identifierId: string } | { identityId: string };

function ownedBy(owner: ChallengeOwner) {
  return 'identifierId' in owner
    ? sql`identifier_id = ${owner.identifierId}`
    : sql`identity_id = ${owner.identityId}`;
}

/**
 * The owner's challenges of one purpose that could still be answered at `now`, oldest first. `R`
 * names the columns that purpose fills (sign-up challenges carry a password hash, sign-in-method
 * challenges the address they will add).
 */
export async function liveChallenges<R>(
  trx: Executor,
  purpose: ChallengePurpose,
  owner: ChallengeOwner,
  now: Date,
): Promise<R[]> {
  const r = await sql<R>`
    SELECT id, identity_id, identifier_id, code_hash, password_hash, identifier_type, identifier_value,
           expires_at, attempts, max_attempts
    FROM challenges
    WHERE ${ownedBy(owner)} AND purpose = ${purpose}
      AND spent_at IS NULL AND revoked_at IS NULL
      AND expires_at > ${now} AND attempts < max_attempts
    ORDER BY created_at, id`.execute(trx);
  return r.rows;
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
    WHERE ${ownedBy(owner)} AND purpose = ${purpose}
      AND spent_at IS NULL AND revoked_at IS NULL
      AND expires_at > ${now} AND attempts < max_attempts
    RETURNING id`.execute(trx);
  return r.rows.length;
}
