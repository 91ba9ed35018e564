import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Problem } from '../problem.js';

export type PasswordPolicyResult = { ok: true } | { ok: false; reason: 'too_short' | 'too_long' | 'common' };

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;

/** SecLists' 10k-most-common.txt; provenance and license in assets/README.md. */
export const COMMON_PASSWORDS_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../assets/common-passwords.txt',
);

let common: Set<string> | undefined;

/** The list, lower-cased, read once on first use. */
export function commonPasswords(): ReadonlySet<string> {
  if (!common) {
    const set = new Set<string>();
    for (const line of readFileSync(COMMON_PASSWORDS_FILE, 'utf8').split('\n')) {
      const entry = line.replace(/\r$/, '');
      if (entry !== '') set.add(entry.toLowerCase());
    }
    common = set;
  }
  return common;
}

/**
 * 12..200 characters counted by Unicode code points ([...s].length); no composition rules;
 * refuses the 10,000 most common passwords (case-insensitive compare).
 */
export function checkNewPassword(password: string): PasswordPolicyResult {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return { ok: false, reason: 'too_short' };
  if (length > MAX_PASSWORD_LENGTH) return { ok: false, reason: 'too_long' };
  if (commonPasswords().has(password.toLowerCase())) return { ok: false, reason: 'common' };
  return { ok: true };
}

const REFUSALS: Record<
  Exclude<PasswordPolicyResult, { ok: true }>['reason'],
  { code: string; rule: string }
> = {
  common: { code: 'common_password', rule: 'too common' },
  too_short: { code: 'minLength', rule: 'too short' },
  too_long: { code: 'maxLength', rule: 'too long' },
};

/**
 * The one refusal of a new password (sign-up, change, recovery): 400 validation.failed whose entry
 * names the field and the rule, never the value. It runs before anything secret is consulted, so
 * it says nothing about the account, the current password or a code.
 */
export function assertPasswordPolicy(password: string, field: string): void {
  const policy = checkNewPassword(password);
  if (policy.ok) return;
  const { code, rule } = REFUSALS[policy.reason];
  throw new Problem('validation.failed', {
    errors: [{ location: 'body', field, code, message: `${field} is ${rule}` }],
  });
}
