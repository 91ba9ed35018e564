import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

export type IdentifierType = 'email' | 'phone';

export interface IdentifierInput {
  identifierType: IdentifierType;
  identifier: string;
  country?: string;
}

export interface NormalisedIdentifier {
  type: IdentifierType;
  /** Lower-cased address or E.164 number: the unique key. */
  value: string;
}

// dot-atom local part (RFC 5322 without quoted strings or comments) and a dotted DNS domain.
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Returns null when the value is not usable (→ 422 identity.identifier_unusable). */
export function normaliseEmail(raw: string): string | null {
  // No trim: surrounding whitespace makes the address unusable rather than silently different.
  const value = raw.toLowerCase();
  const at = value.lastIndexOf('@');
  if (at <= 0 || value.indexOf('@') !== at) return null;
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (local.length > 64 || value.length > 254) return null;
  if (!LOCAL.test(local)) return null;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return null;
  return value;
}

export function normalisePhone(raw: string, country: string): string | null {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: country codes are validated by the library
    const parsed = parsePhoneNumberFromString(raw, country as any);
    if (!parsed?.isValid()) return null;
    if (parsed.country !== undefined && parsed.country !== country && !raw.trim().startsWith('+'))
      return null;
    return parsed.number;
  } catch {
    return null;
  }
}

export function normaliseIdentifier(input: IdentifierInput): NormalisedIdentifier | null {
  if (input.identifierType === 'email') {
    const value = normaliseEmail(input.identifier);
    return value ? { type: 'email', value } : null;
  }
  const value = input.country ? normalisePhone(input.identifier, input.country) : null;
  return value ? { type: 'phone', value } : null;
}
