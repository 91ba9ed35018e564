import { Resolver } from 'node:dns/promises';
import { domainToASCII } from 'node:url';

/**
 * The DNS side of a domain verification (docs/organizations.md, "Domains"): the claimed domain's
 * normal form, the TXT record that proves it, and one lookup of that record through the
 * resolvers of DNS_RESOLVERS (the system's when unset), bounded by DNS_TIMEOUT_MS per server.
 */

/** The label the proof is published under, and the prefix of its value. */
export const TXT_LABEL = '_identity-service-verification';
export const TXT_PREFIX = 'identity-service-verification=';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The domain as stored: trimmed, one trailing dot dropped, lower case, IDNA to punycode. Null when
 * it is malformed, a single label (a top-level domain or a bare name), or an IP literal: a claim
 * names a registrable name with at least one dot, every label 1-63 letters, digits or hyphens
 * (not at either end), 253 characters at most, and a top-level label that is not all digits.
 */
export function normaliseDomain(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || /[\s/:@[\]]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (ascii === '' || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return null;
  return ascii;
}

export function txtRecord(domain: string, token: string): { name: string; value: string } {
  return { name: `${TXT_LABEL}.${domain}`, value: `${TXT_PREFIX}${token}` };
}

/** What a lookup found: the record's strings, none, or no usable answer (timeout, server failure). */
export type TxtAnswer = { kind: 'records'; values: string[] } | { kind: 'none' } | { kind: 'unavailable' };

/** The answers that say the name has no TXT record: the owner has not published it (yet). */
const NO_RECORD = new Set(['ENODATA', 'ENOTFOUND', 'ENONAME']);

export interface TxtLookupOptions {
  /** `ip`, `ipv4:port` or `[ipv6]:port`; empty: the system's resolvers. */
  servers: string[];
  timeoutMs: number;
}

/** Looks up `name`'s TXT records once: one try per server, each bounded by `timeoutMs`. */
export async function lookupTxt(name: string, options: TxtLookupOptions): Promise<TxtAnswer> {
  const resolver = new Resolver({ timeout: options.timeoutMs, tries: 1 });
  if (options.servers.length > 0) resolver.setServers(options.servers);
  // A bound of our own beside c-ares' per-server timeout: no lookup outlives every server's turn.
  const bound = options.timeoutMs * Math.max(1, options.servers.length) + 500;
  const timer = setTimeout(() => resolver.cancel(), bound);
  try {
    const records = await resolver.resolveTxt(name);
    // A record longer than 255 bytes comes in several strings: they are one value.
    return { kind: 'records', values: records.map((chunks) => chunks.join('')) };
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    return NO_RECORD.has(code) ? { kind: 'none' } : { kind: 'unavailable' };
  } finally {
    clearTimeout(timer);
  }
}
