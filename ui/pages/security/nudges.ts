import type { AccountOverview } from '../../api.js';

/** Recovery codes left at which Security suggests new ones (each works once). */
export const RECOVERY_CODES_FEW = 2;

/** A protection Security suggests, by the overview row (and focused page) that sets it up. */
export type Nudge = 'two-step' | 'recovery-codes' | 'recovery-codes-few';

/**
 * What the account lacks, in the order to do it (docs/decisions.md, "Security nudges"): 2-step
 * verification while a password signs in without it (an account without a password signs in with
 * a passkey or a linked account, which need no second step); recovery codes only once 2-step
 * verification is on, since they finish a sign-in without the authenticator and serve nothing
 * else; none left, or almost none.
 */
export function nudgesOf(
  account: Pick<AccountOverview, 'password' | 'secondFactors' | 'recoveryCodes'>,
): Nudge[] {
  const out: Nudge[] = [];
  if (account.password.set && account.secondFactors.active === 0) out.push('two-step');
  if (account.secondFactors.active > 0) {
    if (account.recoveryCodes.remaining === 0) out.push('recovery-codes');
    else if (account.recoveryCodes.remaining <= RECOVERY_CODES_FEW) out.push('recovery-codes-few');
  }
  return out;
}
