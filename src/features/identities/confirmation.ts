import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { normaliseEmail, normalisePhone } from './identifier.js';
import type { IdentifierRow } from './repository.js';

/**
 * What is typed to confirm an account's erasure when it has no identifier (docs/decisions.md):
 * the person's own deletion and an operator's erasure from the console ask the same.
 */
export const NO_IDENTIFIER_CONFIRMATION = 'DELETE';

/** Whether `typed` names one of `identifiers` (or is the word an account without any types). */
export function confirms(typed: string, identifiers: readonly IdentifierRow[]): boolean {
  const value = typed.trim();
  if (identifiers.length === 0) return value === NO_IDENTIFIER_CONFIRMATION;
  return identifiers.some((i) => {
    if (i.type === 'email') return normaliseEmail(value) === i.value;
    // The number's own country reads a national form ("06 12 34 56 78") as the person wrote it.
    const country = parsePhoneNumberFromString(i.value)?.country;
    return country !== undefined && normalisePhone(value, country) === i.value;
  });
}
