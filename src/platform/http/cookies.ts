/**
 * The one cookie codec (docs/security.md, "The hosted pages' cookie"): every cookie the service
 * sets is named, serialized and read here, with one rule for `__Host-` and `Secure`.
 *
 * The rule: an https public origin, and http://localhost, 127.0.0.1 and [::1] (browsers accept
 * Secure cookies from loopback), get the `__Host-` prefix and `Secure`; any other plain-HTTP
 * origin (development only) gets neither, since browsers refuse both there. Every cookie is
 * host-only, `Path=/` and `HttpOnly`: no script of any page ever reads one.
 */

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export type SameSite = 'Lax' | 'None';

/** One cookie as the Cookie header carries it. */
export interface CookiePair {
  name: string;
  value: string;
}

export class Cookies {
  /** Whether cookies carry `Secure` and the `__Host-` prefix (see above). */
  readonly secure: boolean;

  constructor(publicOrigin: string) {
    const url = new URL(publicOrigin);
    this.secure = url.protocol === 'https:' || LOOPBACK_HOSTS.has(url.hostname);
  }

  /** The cookie's name on this origin: `__Host-` + `base` when secure, else `base`. */
  name(base: string): string {
    return this.secure ? `__Host-${base}` : base;
  }

  /**
   * The Set-Cookie value. SameSite=None needs Secure; on a plain-HTTP origin it falls back to Lax.
   * A negative `maxAgeSeconds` is 0 (the cookie removed).
   */
  serialize(name: string, value: string, maxAgeSeconds: number, sameSite: SameSite = 'Lax'): string {
    const site = sameSite === 'None' && !this.secure ? 'Lax' : sameSite;
    const maxAge = Math.max(0, maxAgeSeconds);
    return `${name}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=${site}${this.secure ? '; Secure' : ''}`;
  }

  /** The Set-Cookie value that removes the cookie `name`. */
  clearing(name: string): string {
    return this.serialize(name, '', 0);
  }

  /**
   * The cookies of a Cookie header, in the order sent (a browser sends the most specific path
   * first), names and values trimmed; a value in double quotes is unquoted (RFC 6265, 4.1.1). A
   * part without `=` is skipped.
   */
  parse(cookieHeader: string | undefined): CookiePair[] {
    if (!cookieHeader) return [];
    const pairs: CookiePair[] = [];
    for (const part of cookieHeader.split(';')) {
      const eq = part.indexOf('=');
      if (eq < 0) continue;
      let value = part.slice(eq + 1).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      pairs.push({ name: part.slice(0, eq).trim(), value });
    }
    return pairs;
  }
}
