import { changedOne } from '../../../platform/db/compare-and-set.js';
import type { Executor } from '../../../platform/db/database.js';
import type { KeysetWindow } from '../../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../../platform/pagination/repository.js';
import type { IdentifierType } from '../../identities/identifier.js';
import { firstVerifiedIdentifier } from '../../identities/repository.js';

/** An invitation as its organization's members list it (pending ones only). */
export interface PendingInvitationRow {
  id: string;
  identifierType: IdentifierType;
  identifier: string;
  role: string;
  /** Null when an operator sent it. */
  invitedBy: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/** An invitation found by its token, with its organization, in whatever state it is. */
export interface InvitationByToken {
  id: string;
  organizationId: string;
  organizationName: string;
  organizationSlug: string;
  identifierType: IdentifierType;
  identifier: string;
  role: string;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

/** An invitation the identity sent, for its export. */
export interface SentInvitationRow {
  id: string;
  organizationId: string;
  identifierType: IdentifierType;
  identifier: string;
  role: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

/**
 * Revokes the live pending invitation of the same identifier into the same organization, if any
 * (a new one replaces it). Runs under the organization lock, before the insert, so the partial
 * unique index never refuses the new row.
 */
export async function revokePendingFor(
  trx: Executor,
  i: { organizationId: string; identifierType: IdentifierType; identifier: string; now: Date },
): Promise<string[]> {
  const rows = await trx
    .updateTable('organization_invitations')
    .set({ revoked_at: i.now })
    .where('organization_id', '=', i.organizationId)
    .where('identifier_type', '=', i.identifierType)
    .where('identifier', '=', i.identifier)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

export async function insertInvitation(
  trx: Executor,
  i: {
    id: string;
    organizationId: string;
    identifierType: IdentifierType;
    identifier: string;
    role: string;
    tokenHash: string;
    /** Null for an operator's invitation (sent by the service, no member named). */
    invitedBy: string | null;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await trx
    .insertInto('organization_invitations')
    .values({
      id: i.id,
      organization_id: i.organizationId,
      identifier_type: i.identifierType,
      identifier: i.identifier,
      role: i.role,
      token_hash: i.tokenHash,
      invited_by: i.invitedBy,
      created_at: i.now,
      expires_at: i.expiresAt,
    })
    .execute();
}

/** One page of an organization's pending invitations (neither accepted, revoked nor expired), newest first. */
export function pendingPage(
  trx: Executor,
  organizationId: string,
  now: Date,
  window: KeysetWindow,
): Promise<PendingInvitationRow[]> {
  return trx
    .selectFrom('organization_invitations')
    .select([
      'id',
      'identifier_type as identifierType',
      'identifier',
      'role',
      'invited_by as invitedBy',
      'created_at as createdAt',
      'expires_at as expiresAt',
    ])
    .$narrowType<{ identifierType: IdentifierType }>()
    .where('organization_id', '=', organizationId)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .where(afterPosition('created_at', window, 'id'))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/** Revokes one pending invitation of the organization; false when there is none by this id. */
export function revokeInvitation(
  trx: Executor,
  organizationId: string,
  invitationId: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('organization_invitations')
      .set({ revoked_at: now })
      .where('id', '=', invitationId)
      .where('organization_id', '=', organizationId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .returning('id'),
  );
}

/** The invitation whose token hashes to `tokenHash`, with its live organization. */
export function invitationByToken(trx: Executor, tokenHash: string): Promise<InvitationByToken | undefined> {
  return trx
    .selectFrom('organization_invitations as i')
    .innerJoin('organizations as o', 'o.id', 'i.organization_id')
    .select([
      'i.id',
      'i.organization_id as organizationId',
      'o.name as organizationName',
      'o.slug as organizationSlug',
      'i.identifier_type as identifierType',
      'i.identifier',
      'i.role',
      'i.expires_at as expiresAt',
      'i.accepted_at as acceptedAt',
      'i.revoked_at as revokedAt',
    ])
    .$narrowType<{ identifierType: IdentifierType }>()
    .where('i.token_hash', '=', tokenHash)
    .where('o.disabled_at', 'is', null)
    .executeTakeFirst();
}

/** Who sent an invitation: their name columns and first verified identifier (none once erased). */
export interface InviterRow {
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
  identifier: string | null;
}

/** The inviter of `invitationId`, as the invitation page names them; undefined when gone. */
export function inviterOf(trx: Executor, invitationId: string): Promise<InviterRow | undefined> {
  return trx
    .selectFrom('organization_invitations as i')
    .innerJoin('identities as p', 'p.id', 'i.invited_by')
    .select((eb) => [
      'p.given_name as givenName',
      'p.family_name as familyName',
      'p.display_name as displayName',
      firstVerifiedIdentifier(eb, eb.ref('p.id')).select('f.value').as('identifier'),
    ])
    .where('i.id', '=', invitationId)
    .executeTakeFirst();
}

/**
 * Accepts the invitation in one conditional statement: only a pending, unexpired invitation is
 * marked, so of two acceptances at once exactly one gets the row back (the other, once the first
 * commits, re-evaluates the WHERE on the new row version and matches nothing).
 */
export function acceptInvitation(
  trx: Executor,
  invitationId: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('organization_invitations')
      .set({ accepted_at: now, accepted_by: identityId })
      .where('id', '=', invitationId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('id'),
  );
}

/** The invitation's state as it is now (read after a failed acceptance, to name the refusal). */
export function invitationState(
  trx: Executor,
  invitationId: string,
): Promise<{ expiresAt: Date; acceptedAt: Date | null; revokedAt: Date | null } | undefined> {
  return trx
    .selectFrom('organization_invitations')
    .select(['expires_at as expiresAt', 'accepted_at as acceptedAt', 'revoked_at as revokedAt'])
    .where('id', '=', invitationId)
    .executeTakeFirst();
}

/** Whether the identity holds this identifier verified (and not removed). */
export async function holdsVerified(
  trx: Executor,
  identityId: string,
  identifierType: IdentifierType,
  identifier: string,
): Promise<boolean> {
  const row = await trx
    .selectFrom('identifiers')
    .select('id')
    .where('identity_id', '=', identityId)
    .where('type', '=', identifierType)
    .where('value', '=', identifier)
    .where('verified_at', 'is not', null)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Export: every invitation the identity sent, oldest first (never the token's hash). */
export function invitationsSentBy(trx: Executor, identityId: string): Promise<SentInvitationRow[]> {
  return trx
    .selectFrom('organization_invitations')
    .select([
      'id',
      'organization_id as organizationId',
      'identifier_type as identifierType',
      'identifier',
      'role',
      'created_at as createdAt',
      'expires_at as expiresAt',
      'accepted_at as acceptedAt',
      'revoked_at as revokedAt',
    ])
    .$narrowType<{ identifierType: IdentifierType }>()
    .where('invited_by', '=', identityId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** An invitation as events tell of it (never its token's hash); undefined when there is none. */
export function invitationById(trx: Executor, invitationId: string) {
  return trx
    .selectFrom('organization_invitations')
    .select([
      'id',
      'organization_id as organizationId',
      'identifier_type as identifierType',
      'identifier',
      'role',
      'invited_by as invitedBy',
      'created_at as createdAt',
      'expires_at as expiresAt',
      'accepted_at as acceptedAt',
      'accepted_by as acceptedBy',
      'revoked_at as revokedAt',
    ])
    .where('id', '=', invitationId)
    .executeTakeFirst();
}
