import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** 256-bit opaque token, base64url (refresh tokens, elevation tokens, tickets, nonces). */
export function opaqueToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Lookup hash of a high-entropy token: plain SHA-256 is enough when the input is 256 random bits. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export function hmacHex(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(value, 'utf8').digest('hex');
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The alphabets of out-of-band codes (VERIFICATION_CODE_FORMAT names one). */
export type CodeFormat = 'numeric' | 'alphabetic' | 'alphanumeric';

const ALPHABETS: Record<CodeFormat, string> = {
  numeric: '0123456789',
  alphabetic: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
  alphanumeric: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
};

/** An out-of-band code from the CSPRNG, uniform over the alphabet (randomInt has no modulo bias). */
export function generateCode(format: CodeFormat, length: number): string {
  const alphabet = ALPHABETS[format];
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** The schema pattern a submitted code must match for the configured format (lower case accepted). */
export function codePattern(format: CodeFormat, length: number): string {
  const cls = format === 'numeric' ? '0-9' : format === 'alphabetic' ? 'A-Za-z' : 'A-Za-z0-9';
  return `^[${cls}]{${length}}$`;
}

/**
 * Keyed hash of an out-of-band code. Codes are short, so a plain hash could be brute-forced from a
 * database dump; the key (derived from SECRETS_KEY) makes the stored value useless without it.
 * Codes are compared upper-cased, so the lower-case rendering of an alphabetic code matches.
 */
export class CodeHasher {
  constructor(private readonly key: Buffer) {}
  hash(code: string): string {
    return hmacHex(this.key, code.toUpperCase());
  }
}
