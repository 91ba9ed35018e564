import type { AuditEvent } from '../../platform/audit/audit.js';
import type { NoticeKind } from '../../platform/notify/templates.js';

// The changes an attacker holding a session would make, each told to the owner; their wording, in
// each language, is in src/platform/notify/templates.ts.

/** What an audit event tells the owner, or null when it is not a change to tell. */
export interface NoticeFor {
  identityId: string;
  kind: NoticeKind;
  /** The identifier removed, whose address is told too. */
  removedIdentifierId?: string;
}

/**
 * Maps an audit event to its notice. The identity is the actor of the owner's own act (appendOwn,
 * and the second-factor events, whose target is the factor). A sign-up's first verification and a
 * new account through a provider are not changes; an operator's acts are named otherwise and are
 * not told here.
 */
export function noticeFor(event: AuditEvent): NoticeFor | null {
  if (event.outcome !== 'success' || !event.actor) return null;
  const identityId = event.actor;
  const kindDetail = event.details?.kind;
  const methodId = typeof event.details?.methodId === 'string' ? event.details.methodId : undefined;
  switch (event.name) {
    case 'identity.password.changed':
      return { identityId, kind: 'password_changed' };
    case 'identity.password.recovered':
      return { identityId, kind: 'password_recovered' };
    case 'identity.second_factor.verified':
      return { identityId, kind: 'authenticator_added' };
    case 'identity.second_factor.removed':
      return { identityId, kind: 'authenticator_removed' };
    case 'identity.recovery_codes.issued':
      return { identityId, kind: 'recovery_codes_issued' };
    case 'identity.sign_in_method.verified':
      if (kindDetail === 'passkey') return { identityId, kind: 'passkey_added' };
      if (kindDetail === 'provider') return { identityId, kind: 'provider_linked' };
      if (kindDetail === 'email') return { identityId, kind: 'email_added' };
      if (kindDetail === 'phone') return { identityId, kind: 'phone_added' };
      return null;
    case 'identity.sign_in_method.removed':
      if (kindDetail === 'password') return { identityId, kind: 'password_removed' };
      if (kindDetail === 'passkey') return { identityId, kind: 'passkey_removed' };
      if (kindDetail === 'provider') return { identityId, kind: 'provider_unlinked' };
      if (kindDetail === 'identifier') {
        return methodId
          ? { identityId, kind: 'identifier_removed', removedIdentifierId: methodId }
          : { identityId, kind: 'identifier_removed' };
      }
      return null;
    default:
      return null;
  }
}
