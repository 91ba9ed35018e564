import type { Executor } from '../../platform/db/database.js';

/*
 * What the service holds about one identity, read for its owner's export (GET /account/export) and
 * an operator's view of it. Reads only: each table is written by its own feature's repository.
 * Never a secret, hash or sealed value: the columns are named one by one.
 */

export interface IdentityFacts {
  id: string;
  createdAt: Date;
  /** The identity's language (migration 0027). */
  locale: string;
  /** The identity's name (migration 0029). */
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
  /** The id of the identity's picture (migration 0030), null when it has none. */
  pictureId: string | null;
  hasPassword: boolean;
  passwordChangedAt: Date | null;
  failedAttempts: number;
  lockedUntil: Date | null;
  disabledAt: Date | null;
  erasedAt: Date | null;
}

export async function identityFacts(trx: Executor, identityId: string): Promise<IdentityFacts | undefined> {
  return trx
    .selectFrom('identities')
    .select((eb) => [
      'id',
      'created_at as createdAt',
      'locale',
      'given_name as givenName',
      'family_name as familyName',
      'display_name as displayName',
      eb
        .selectFrom('identity_pictures as p')
        .select('p.id')
        .whereRef('p.identity_id', '=', 'identities.id')
        .as('pictureId'),
      eb('password_hash', 'is not', null).$castTo<boolean>().as('hasPassword'),
      'password_changed_at as passwordChangedAt',
      'failed_attempts as failedAttempts',
      'locked_until as lockedUntil',
      'disabled_at as disabledAt',
      'erased_at as erasedAt',
    ])
    .where('id', '=', identityId)
    .executeTakeFirst();
}

export interface IdentifierFacts {
  id: string;
  type: 'email' | 'phone';
  value: string;
  createdAt: Date;
  verifiedAt: Date | null;
  lastUsedAt: Date | null;
}

/** Live identifiers (verified, or a registration still pending), unmasked. */
export async function identifierFacts(trx: Executor, identityId: string): Promise<IdentifierFacts[]> {
  return trx
    .selectFrom('identifiers')
    .select([
      'id',
      'type',
      'value',
      'created_at as createdAt',
      'verified_at as verifiedAt',
      'last_used_at as lastUsedAt',
    ])
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .$narrowType<{ type: 'email' | 'phone' }>()
    .execute();
}

export interface SecondFactorFacts {
  id: string;
  label: string | null;
  algorithm: string;
  digits: number;
  period: number;
  createdAt: Date;
  verifiedAt: Date;
  lastUsedAt: Date | null;
}

/** Authenticator apps, verified and not removed; never the secret. */
export async function secondFactorFacts(trx: Executor, identityId: string): Promise<SecondFactorFacts[]> {
  return trx
    .selectFrom('second_factors')
    .select([
      'id',
      'label',
      'algorithm',
      'digits',
      'period',
      'created_at as createdAt',
      'verified_at as verifiedAt',
      'last_used_at as lastUsedAt',
    ])
    .where('identity_id', '=', identityId)
    .where('verified_at', 'is not', null)
    .where('revoked_at', 'is', null)
    .orderBy('verified_at')
    .orderBy('id')
    .$narrowType<{ verifiedAt: Date }>()
    .execute();
}

export interface PasskeyFacts {
  id: string;
  label: string | null;
  aaguid: string;
  backedUp: boolean;
  transports: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** Live passkeys; never the public key or the credential id. */
export async function passkeyFacts(trx: Executor, identityId: string): Promise<PasskeyFacts[]> {
  return trx
    .selectFrom('passkeys')
    .select([
      'id',
      'label',
      'aaguid',
      'backed_up as backedUp',
      'transports',
      'created_at as createdAt',
      'last_used_at as lastUsedAt',
    ])
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export interface ProviderLinkFacts {
  id: string;
  provider: string;
  subject: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export async function providerLinkFacts(trx: Executor, identityId: string): Promise<ProviderLinkFacts[]> {
  return trx
    .selectFrom('provider_links')
    .select(['id', 'provider', 'subject', 'created_at as createdAt', 'last_used_at as lastUsedAt'])
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export interface SessionFacts {
  id: string;
  method: string;
  createdAt: Date;
  renewedAt: Date | null;
  expiresAt: Date;
  revokedAt: Date | null;
  revokedReason: string | null;
  ipAddress: string | null;
  userAgent: string | null;
}

/** Every session the identity ever had, ended ones too, newest first; never a token or hash. */
export async function sessionFacts(trx: Executor, identityId: string): Promise<SessionFacts[]> {
  return trx
    .selectFrom('sessions')
    .select([
      'id',
      'method',
      'created_at as createdAt',
      'renewed_at as renewedAt',
      'expires_at as expiresAt',
      'revoked_at as revokedAt',
      'revoked_reason as revokedReason',
      'ip_address as ipAddress',
      'user_agent as userAgent',
    ])
    .where('identity_id', '=', identityId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export interface AttemptFacts {
  id: string;
  occurredAt: Date;
  method: string;
  outcome: string;
  ipAddress: string | null;
  userAgent: string | null;
  sessionId: string | null;
  noticeSentAt: Date | null;
}

export async function attemptFacts(trx: Executor, identityId: string): Promise<AttemptFacts[]> {
  return trx
    .selectFrom('sign_in_attempts')
    .select([
      'id',
      'occurred_at as occurredAt',
      'method',
      'outcome',
      'ip_address as ipAddress',
      'user_agent as userAgent',
      'session_id as sessionId',
      'notice_sent_at as noticeSentAt',
    ])
    .where('identity_id', '=', identityId)
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export interface AuditFacts {
  seq: string | number;
  id: string;
  occurredAt: Date;
  name: string;
  actor: string | null;
  target: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

/** Audit records naming the identity as actor or target, in chain order; never the seal. */
export async function auditFacts(trx: Executor, identityId: string): Promise<AuditFacts[]> {
  return trx
    .selectFrom('audit_records')
    .select((eb) => [
      'seq',
      'id',
      'occurred_at as occurredAt',
      'name',
      'actor',
      'target',
      'outcome',
      eb.ref('details').$castTo<Record<string, unknown>>().as('details'),
    ])
    .where((eb) => eb.or([eb('actor', '=', identityId), eb('target', '=', identityId)]))
    .orderBy('seq')
    .execute();
}

export interface MembershipFacts {
  organizationId: string;
  name: string;
  slug: string;
  role: string;
  joinedAt: Date;
  roleChangedAt: Date;
}

/** The identity's organization memberships, oldest first. */
export async function membershipFacts(trx: Executor, identityId: string): Promise<MembershipFacts[]> {
  return trx
    .selectFrom('organization_memberships as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select([
      'o.id as organizationId',
      'o.name',
      'o.slug',
      'm.role',
      'm.created_at as joinedAt',
      'm.updated_at as roleChangedAt',
    ])
    .where('m.identity_id', '=', identityId)
    .orderBy('m.created_at')
    .orderBy('o.id')
    .execute();
}
