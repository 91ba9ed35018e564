import { createHash } from 'node:crypto';

/**
 * The password has no row of its own, so its method id is derived from the identity id: the
 * SHA-256 of "password-method:<identityId>" laid out as an RFC 9562 version-8 UUID. Stable across
 * password changes, different for every identity, and never equal to the identity id itself.
 */
export function passwordMethodId(identityId: string): string {
  const h = createHash('sha256').update(`password-method:${identityId}`).digest();
  h[6] = (h[6] & 0x0f) | 0x80;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
