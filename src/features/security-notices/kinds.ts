import type { AuditEvent } from '../../platform/audit/audit.js';

/** The changes an attacker holding a session would make, each told to the owner. */
export type NoticeKind =
  | 'password_changed'
  | 'password_recovered'
  | 'password_removed'
  | 'authenticator_added'
  | 'authenticator_removed'
  | 'passkey_added'
  | 'passkey_removed'
  | 'recovery_codes_issued'
  | 'email_added'
  | 'phone_added'
  | 'identifier_removed'
  | 'provider_linked'
  | 'provider_unlinked';

/** One line per change, in plain words; never an address, a code or a link. */
const WORDING: Record<NoticeKind, string> = {
  password_changed: 'Your password was changed.',
  password_recovered: 'Your password was reset with a recovery code ("Forgot password").',
  password_removed: 'Your password was removed.',
  authenticator_added: 'An authenticator app was added for 2-step verification.',
  authenticator_removed: 'An authenticator app was removed from 2-step verification.',
  passkey_added: 'A passkey was added.',
  passkey_removed: 'A passkey was removed.',
  recovery_codes_issued: 'New recovery codes were created; the earlier ones no longer work.',
  email_added: 'An email address was added.',
  phone_added: 'A phone number was added.',
  identifier_removed: 'An email address or phone number was removed.',
  provider_linked: 'A sign-in with another account (such as Google) was linked.',
  provider_unlinked: 'A sign-in with another account (such as Google) was removed.',
};

/** Short forms for a text message. */
const SHORT: Record<NoticeKind, string> = {
  password_changed: 'password changed',
  password_recovered: 'password reset',
  password_removed: 'password removed',
  authenticator_added: 'authenticator added',
  authenticator_removed: 'authenticator removed',
  passkey_added: 'passkey added',
  passkey_removed: 'passkey removed',
  recovery_codes_issued: 'new recovery codes',
  email_added: 'email added',
  phone_added: 'phone number added',
  identifier_removed: 'email or phone removed',
  provider_linked: 'sign-in account linked',
  provider_unlinked: 'sign-in account removed',
};

export function wordingOf(kind: string): string {
  return WORDING[kind as NoticeKind] ?? 'A security setting of your account was changed.';
}

export function shortWordingOf(kind: string): string {
  return SHORT[kind as NoticeKind] ?? 'security setting changed';
}

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
