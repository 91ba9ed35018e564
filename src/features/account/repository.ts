import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';

/*
 * What the service holds about one identity, read for its owner's export (GET /account/export) and
 * an operator's view of it. Reads only: each table is written by its own feature's repository.
 * Never a secret, hash or sealed value: the columns are named one by one.
 */

export interface IdentityFacts {
  id: string;
  created_at: Date;
  has_password: boolean;
  password_changed_at: Date | null;
  failed_attempts: number;
  locked_until: Date | null;
  disabled_at: Date | null;
  erased_at: Date | null;
}

export async function identityFacts(trx: Executor, identityId: string): Promise<IdentityFacts | undefined> {
  const r = await sql<IdentityFacts>`
    SELECT id, created_at, password_hash IS NOT NULL AS has_password, password_changed_at, failed_attempts,
           locked_until, disabled_at, erased_at
    FROM identities WHERE id = ${identityId}`.execute(trx);
  return r.rows[0];
}

export interface IdentifierFacts {
  id: string;
  type: 'email' | 'phone';
  value: string;
  created_at: Date;
  verified_at: Date | null;
  last_used_at: Date | null;
}

/** Live identifiers (verified, or a registration still pending), unmasked. */
export async function identifierFacts(trx: Executor, identityId: string): Promise<IdentifierFacts[]> {
  const r = await sql<IdentifierFacts>`
    SELECT id, type, value, created_at, verified_at, last_used_at FROM identifiers
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

export interface SecondFactorFacts {
  id: string;
  label: string | null;
  algorithm: string;
  digits: number;
  period: number;
  created_at: Date;
  verified_at: Date;
  last_used_at: Date | null;
}

/** Authenticator apps, verified and not removed; never the secret. */
export async function secondFactorFacts(trx: Executor, identityId: string): Promise<SecondFactorFacts[]> {
  const r = await sql<SecondFactorFacts>`
    SELECT id, label, algorithm, digits, period, created_at, verified_at, last_used_at FROM second_factors
    WHERE identity_id = ${identityId} AND verified_at IS NOT NULL AND revoked_at IS NULL
    ORDER BY verified_at, id`.execute(trx);
  return r.rows;
}

export interface PasskeyFacts {
  id: string;
  label: string | null;
  aaguid: string;
  backed_up: boolean;
  transports: string[];
  created_at: Date;
  last_used_at: Date | null;
}

/** Live passkeys; never the public key or the credential id. */
export async function passkeyFacts(trx: Executor, identityId: string): Promise<PasskeyFacts[]> {
  const r = await sql<PasskeyFacts>`
    SELECT id, label, aaguid, backed_up, transports, created_at, last_used_at FROM passkeys
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

export interface ProviderLinkFacts {
  id: string;
  provider: string;
  subject: string;
  created_at: Date;
  last_used_at: Date | null;
}

export async function providerLinkFacts(trx: Executor, identityId: string): Promise<ProviderLinkFacts[]> {
  const r = await sql<ProviderLinkFacts>`
    SELECT id, provider, subject, created_at, last_used_at FROM provider_links
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

export interface SessionFacts {
  id: string;
  method: string;
  created_at: Date;
  renewed_at: Date | null;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: string | null;
  ip_address: string | null;
  user_agent: string | null;
}

/** Every session the identity ever had, ended ones too, newest first; never a token or hash. */
export async function sessionFacts(trx: Executor, identityId: string): Promise<SessionFacts[]> {
  const r = await sql<SessionFacts>`
    SELECT id, method, created_at, renewed_at, expires_at, revoked_at, revoked_reason, ip_address, user_agent
    FROM sessions WHERE identity_id = ${identityId} ORDER BY created_at DESC, id DESC`.execute(trx);
  return r.rows;
}

export interface AttemptFacts {
  id: string;
  occurred_at: Date;
  method: string;
  outcome: string;
  ip_address: string | null;
  user_agent: string | null;
  session_id: string | null;
  notice_sent_at: Date | null;
}

export async function attemptFacts(trx: Executor, identityId: string): Promise<AttemptFacts[]> {
  const r = await sql<AttemptFacts>`
    SELECT id, occurred_at, method, outcome, ip_address, user_agent, session_id, notice_sent_at
    FROM sign_in_attempts WHERE identity_id = ${identityId} ORDER BY occurred_at DESC, id DESC`.execute(trx);
  return r.rows;
}

export interface AuditFacts {
  seq: string | number;
  id: string;
  occurred_at: Date;
  name: string;
  actor: string | null;
  target: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

/** Audit records naming the identity as actor or target, in chain order; never the seal. */
export async function auditFacts(trx: Executor, identityId: string): Promise<AuditFacts[]> {
  const r = await sql<AuditFacts>`
    SELECT seq, id, occurred_at, name, actor, target, outcome, details FROM audit_records
    WHERE actor = ${identityId} OR target = ${identityId} ORDER BY seq`.execute(trx);
  return r.rows;
}
