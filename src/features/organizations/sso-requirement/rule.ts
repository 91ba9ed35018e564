import type { Executor } from '../../../platform/db/database.js';
import { Problem } from '../../../platform/problem.js';
import type { NormalisedIdentifier } from '../../identities/identifier.js';
import { domainRequiresSso, identityRequiresSso } from './repository.js';

/**
 * "Require SSO" (docs/sso.md, "Require SSO"): the first factor an identity may use when its
 * organization requires SSO is the organization's IdP, and nothing else.
 *
 * Two checks, each deciding on what is not secret:
 * - by address, before any account is read: an email in a domain whose organization requires SSO
 *   is answered `identity.sso_required` on password sign-in, code and link sends, sign-up and
 *   password recovery — the same answer, at the same cost, whether anyone holds the address and
 *   whatever the password (the domain's IdP already shows itself to anyone through home-realm
 *   discovery);
 * - by identity, where every sign-in ends (sign-in/complete.ts): an identity holding such an
 *   address, proven by anything but SSO (a phone number's password, a provider, a passkey), gets
 *   the strategy's own refusal, the one a disabled identity gets (docs/decisions.md, "Require SSO").
 */
export async function refuseAddressUnderSso(
  trx: Executor,
  address: NormalisedIdentifier | null | undefined,
): Promise<void> {
  if (address?.type !== 'email') return;
  const domain = address.value.slice(address.value.lastIndexOf('@') + 1);
  if (await domainRequiresSso(trx, domain)) throw new Problem('identity.sso_required');
}

/** Whether a sign-in whose first factor was `firstMethod` is refused for this identity. */
export async function refusedUnderSso(
  trx: Executor,
  identityId: string,
  firstMethod: string,
): Promise<boolean> {
  if (firstMethod === 'sso') return false;
  return identityRequiresSso(trx, identityId);
}
