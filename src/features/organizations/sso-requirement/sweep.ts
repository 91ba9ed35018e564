import type { Executor } from '../../../platform/db/database.js';

/** The session-revocation reason of every session "require SSO" ends. */
export const SSO_REQUIRED_REASON = 'sso_required';

/** The domain part of a normalised email address. */
export function emailDomain(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

/** What a sweep ended: identities signed out, sessions revoked. */
export interface SsoSweep {
  identities: number;
  sessions: number;
}

/**
 * What a domain's verification also does while its organization requires SSO (docs/sso.md,
 * "Require SSO"): the sessions of every identity holding a verified address in it end. It belongs
 * to the sessions feature (sessions/sso-required.ts), above this one, so the composition root hands
 * it to the domains' service (src/context.ts), as `erasing` is handed to the operators' acts.
 * Called in the verification's transaction, under the organization's row lock and the domain's.
 */
export type SsoDomainSweep = (
  trx: Executor,
  verified: { domain: string; actor: string; now: Date },
) => Promise<SsoSweep>;
