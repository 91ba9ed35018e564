import { createHmac } from 'node:crypto';
import { safeEqual } from '../../platform/crypto/tokens.js';
import { Cookies } from '../../platform/http/cookies.js';

/** The cookie that names the browser which asked for a sign-in code (see SignInLinks). */
const COOKIE_BASE = 'sign_in_code';

/** What a link token and a browser binding look like: 43 base64url characters (an HMAC-SHA256). */
const MAC = /^[A-Za-z0-9_-]{43}$/;

/**
 * The link form of a sign-in code (SIGN_IN_LINKS; docs/security.md, "Sign-in links"). Nothing is
 * stored for it: the link's token and the asking browser's binding are both HMACs of the code's id
 * under their own derived key ('sign-in-links'), each with its own label, so
 *
 * - the link (`<ui>#/sign-in/link/<id>/<token>`) is unguessable and names one challenge: it lives
 *   and dies with the challenge's code (spent, revoked by a newer code, expired, exhausted);
 * - the cookie set by POST /sign-ins/codes (`<id>.<binding>`, HttpOnly, SameSite=Lax) proves a
 *   later request comes from the browser that asked, for an id that names nothing too (an unknown
 *   address gets the same cookie as a known one).
 *
 * The token rides in the fragment of the link, which browsers never send to a server, so it is in
 * no access log and no Referer; the hosted page posts it.
 */
export class SignInLinks {
  readonly #key: Buffer;
  readonly #cookies: Cookies;
  readonly #page: string;
  readonly cookieName: string;

  constructor(key: Buffer, publicOrigin: string, uiPath: string) {
    this.#key = key;
    this.#cookies = new Cookies(publicOrigin);
    this.#page = `${publicOrigin}${uiPath}`;
    this.cookieName = this.#cookies.name(COOKIE_BASE);
  }

  #mac(label: 'link' | 'browser', id: string): string {
    return createHmac('sha256', this.#key).update(`${label}:${id.toLowerCase()}`).digest('base64url');
  }

  /** The link a sign-in code's message carries. */
  url(id: string): string {
    return `${this.#page}#/sign-in/link/${id}/${this.#mac('link', id)}`;
  }

  /** Whether `token` is the link token of `id` (constant time; any other shape is false). */
  holds(id: string, token: string): boolean {
    return MAC.test(token) && safeEqual(token, this.#mac('link', id));
  }

  /** The Set-Cookie value that binds `id` to this browser for `seconds`. */
  binding(id: string, seconds: number): string {
    return this.#cookies.serialize(
      this.cookieName,
      `${id.toLowerCase()}.${this.#mac('browser', id)}`,
      seconds,
    );
  }

  /** Whether the request's Cookie header holds this browser's binding to `id`. */
  startedHere(cookieHeader: string | undefined, id: string): boolean {
    const expected = `${id.toLowerCase()}.${this.#mac('browser', id)}`;
    return this.#cookies
      .parse(cookieHeader)
      .some(({ name, value }) => name === this.cookieName && safeEqual(value, expected));
  }
}
