import {
  BREACHED_PASSWORD_MESSAGE,
  checkNewPassword,
  passwordUserInputs,
} from '../../shared/password-policy.js';
import { Problem } from '../problem.js';
import type { BreachCheck } from './breached-passwords.js';

// The rule itself is shared with the hosted page (src/shared/password-policy.ts); the service adds
// its refusal here.
export {
  checkNewPassword,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  MIN_PASSWORD_SCORE,
  passwordUserInputs,
  preparePasswordPolicy,
} from '../../shared/password-policy.js';

const RULES = {
  too_short: { code: 'minLength', rule: 'too short' },
  too_long: { code: 'maxLength', rule: 'too long' },
} as const;

/**
 * The one refusal of a new password (sign-up, change, recovery): 400 validation.failed whose entry
 * names the field and the rule, never the value; a weak password's entry (`weak_password`) carries
 * zxcvbn's reason; a password known from breaches (the bundled list, then the range API when one is
 * configured, `breaches`) has the entry `breached_password`. It runs before anything secret is
 * consulted, so it says nothing about the account, the current password or a code.
 */
export async function assertPasswordPolicy(
  password: string,
  field: string,
  identifiers: readonly string[] = [],
  productName?: string,
  breaches?: BreachCheck,
): Promise<void> {
  const policy = await checkNewPassword(
    password,
    passwordUserInputs(identifiers, productName ? [productName] : []),
  );
  // Asked only of a password that passes every local rule: nothing leaves for one refused anyway.
  if (policy.ok && !(await breaches?.isBreached(password))) return;
  const entry = policy.ok
    ? { code: 'breached_password', message: BREACHED_PASSWORD_MESSAGE }
    : policy.reason === 'weak'
      ? { code: 'weak_password', message: policy.message }
      : policy.reason === 'breached'
        ? { code: 'breached_password', message: policy.message }
        : { code: RULES[policy.reason].code, message: `${field} is ${RULES[policy.reason].rule}` };
  throw new Problem('validation.failed', { errors: [{ location: 'body', field, ...entry }] });
}
