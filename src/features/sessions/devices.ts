import type { Static } from '@sinclair/typebox';
import ipaddr from 'ipaddr.js';
import { UAParser } from 'ua-parser-js';
import type { DeviceSchema } from './schemas.js';

/**
 * What the owner's session list says of the device a session started on (docs/api.md, "1. Where am I
 * signed in").
 */
export type Device = Static<typeof DeviceSchema>;

/** Parsed by ua-parser-js (a maintained parser; the MIT-licensed 1.x line), never by our own regexes. */
export function describeDevice(userAgent: string | null): Device {
  if (!userAgent) return { description: 'Unknown device', browser: null, os: null, type: 'unknown' };
  const r = new UAParser(userAgent).getResult();
  const browser = r.browser.name ? [r.browser.name, r.browser.major].filter(Boolean).join(' ') : null;
  const os = r.os.name ? [r.os.name, r.os.version].filter(Boolean).join(' ') : null;
  const type = r.device.type ?? 'desktop';
  const parts = [
    browser ?? 'Unknown browser',
    os ? `on ${os}` : null,
    type !== 'desktop' ? `(${type})` : null,
  ];
  return { description: parts.filter(Boolean).join(' '), browser, os, type };
}

/**
 * The device as a new-sign-in notice compares it: browser and OS family and device type, without
 * versions (a browser update is the same device).
 */
export function deviceFamily(userAgent: string | null): string {
  if (!userAgent) return 'unknown';
  let family = families.get(userAgent);
  if (family === undefined) {
    const r = new UAParser(userAgent).getResult();
    family = [r.browser.name ?? '?', r.os.name ?? '?', r.device.type ?? 'desktop'].join('|');
    if (families.size >= FAMILIES_KEPT) families.clear();
    families.set(userAgent, family);
  }
  return family;
}

/**
 * Families already parsed, by user agent: a new-sign-in notice compares the sign-in's device with
 * each of up to 200 earlier origins, and parsing one user agent takes tens of microseconds on the
 * event loop, so an identity with many origins held the loop for milliseconds per sign-in. Few
 * distinct user agents make up most traffic; the map is emptied when it reaches its bound.
 */
const FAMILIES_KEPT = 2000;
const families = new Map<string, string>();

/**
 * The address prefix a notice compares: an IPv4 address by its /24, an IPv6 one by its /64 (what
 * one subscriber or one network is handed), anything unparsable as itself.
 */
export function addressPrefix(ip: string | null): string {
  if (!ip || !ipaddr.isValid(ip)) return ip ?? '';
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return `${parsed.toByteArray().slice(0, 3).join('.')}.0/24`;
  return `${(parsed as ipaddr.IPv6).toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}
