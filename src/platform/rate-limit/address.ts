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

/**
 * TRUST_PROXY entries: each an IPv4 or IPv6 address or a CIDR range. Returns the entries as given,
 * or null when any of them is not one (a bare hop count or `true` is refused: Fastify would read a
 * number as "trust nothing" and `true` as "trust everyone").
 */
export function proxyList(value: string): string[] | null {
  const entries = value.split(',').map((e) => e.trim());
  const address = (a: string) => ipaddr.IPv4.isValidFourPartDecimal(a) || ipaddr.IPv6.isValid(a);
  for (const entry of entries) {
    const [host, bits, extra] = entry.split('/');
    if (!address(host) || extra !== undefined) return null;
    if (bits === undefined) continue;
    const max = ipaddr.IPv4.isValidFourPartDecimal(host) ? 32 : 128;
    if (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > max) return null;
  }
  return entries;
}
