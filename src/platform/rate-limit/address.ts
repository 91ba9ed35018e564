import ipaddr from 'ipaddr.js';

/**
 * The bucket a client address is counted in, for every limit and budget keyed by address: an
 * IPv6 address by its /64 (one subscriber gets a whole /64, so counting single addresses would give
 * an attacker 2^64 buckets), an IPv4 address (or an IPv4-mapped IPv6 one) as itself. Anything
 * unparsable counts as itself.
 */
export function addressBucket(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).toNormalizedString().split(':').slice(0, 4).join(':');
  return `${prefix}::/64`;
}
