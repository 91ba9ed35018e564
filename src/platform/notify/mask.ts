import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/**
 * The one masked form of an address (docs/decisions.md, "Identifiers, codes and passwords"), for
 * answers and log lines alike: `a***@example.com`, `+33******78`. The star count hides the length.
 * A value that is neither a usable address nor a parsable number shows nothing at all.
 */
export function maskIdentifier(type: 'email' | 'phone', value: string): string {
  if (type === 'email') {
    const at = value.lastIndexOf('@');
    return at > 0 ? `${value.slice(0, 1)}***${value.slice(at)}` : '***';
  }
  const parsed = parsePhoneNumberFromString(value);
  if (parsed) return `+${parsed.countryCallingCode}******${value.slice(-2)}`;
  return value.length >= 8 ? `${value.slice(0, 3)}******${value.slice(-2)}` : '***';
}

/** A recipient of an outbound message, whose type is told by its shape. */
export function maskRecipient(to: string): string {
  return maskIdentifier(to.includes('@') ? 'email' : 'phone', to);
}
