import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitSetting } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { Cookies } from '../../platform/http/cookies.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import { Problem } from '../../platform/problem.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import type { SessionGrant, SessionService } from './service.js';

/**
 * The hosted pages' session (docs/security.md, "The hosted pages' cookie"; docs/api.md, "Browser
 * session"): the refresh token lives in an HttpOnly cookie that only these three routes read, and
 * the page's script keeps only the short-lived access token, in memory.
 *
 * - POST /browser-session: the handover of a sign-in's refresh token (rotated at once);
 * - POST /browser-session/renewals: a renewal with the cookie's token;
 * - POST /browser-session/sign-outs: ends the cookie's session.
 *
 * The cookie authenticates, so each route is refused unless the request comes from the service's
 * own origin (Origin, and Sec-Fetch-Site when the browser sends it), and no CORS answer ever lets
 * another origin read these responses.
 */

const COOKIE_BASE = 'identity-session';
/** What a refresh token looks like (base64url, opaqueToken); anything else in the cookie is ignored. */
const TOKEN = /^[A-Za-z0-9_-]{1,512}$/;

/**
 * The hosted pages' cookie through the one codec (platform/http/cookies.ts):
 * `__Host-identity-session` with Secure on an https or loopback origin, the unprefixed
 * `identity-session` without Secure on any other plain-HTTP origin.
 */
export class BrowserSessionCookie {
  readonly #cookies: Cookies;
  readonly name: string;

  constructor(publicOrigin: string) {
    this.#cookies = new Cookies(publicOrigin);
    this.name = this.#cookies.name(COOKIE_BASE);
  }

  /**
   * The refresh token the browser's cookie holds, from the Cookie header, or undefined. The first
   * well-formed value wins (a browser sends the most specific path first; with the `__Host-` prefix
   * no other host or path can plant a second one).
   */
  refreshToken(cookieHeader: string | undefined): string | undefined {
    for (const { name, value } of this.#cookies.parse(cookieHeader)) {
      if (name === this.name && TOKEN.test(value)) return value;
    }
    return undefined;
  }

  /** The Set-Cookie value that holds `token` until the session's absolute end. */
  holding(token: string, maxAgeSeconds: number): string {
    return this.#cookies.serialize(this.name, token, maxAgeSeconds);
  }

  /** The Set-Cookie value that removes the cookie. */
  get clearing(): string {
    return this.#cookies.clearing(this.name);
  }
}

/** The hosted pages' cookie name on this origin (see BrowserSessionCookie). */
export function browserSessionCookieName(publicOrigin: string): string {
  return new BrowserSessionCookie(publicOrigin).name;
}

/** The refresh token the browser's cookie holds (see BrowserSessionCookie.refreshToken). */
export function refreshTokenFromCookie(
  cookieHeader: string | undefined,
  publicOrigin: string,
): string | undefined {
  return new BrowserSessionCookie(publicOrigin).refreshToken(cookieHeader);
}

/** What the browser-session routes need: handed in by sessions/routes.ts. */
export interface BrowserSessionOptions {
  sessions: SessionService;
  clock: Clock;
  publicOrigin: string;
  /** The renewal route's limit (PROVES_A_PASSWORD), each route counted on its own. */
  rateLimit: RateLimitSetting;
}

/**
 * CSRF defence: the cookie goes with every request a browser makes to this site, including those a
 * page elsewhere triggers (a form post, a fetch). Origin names the page that made the request and
 * no page can forge it; a request without it (or from any other origin) is refused before anything
 * is read or written. Sec-Fetch-Site, where the browser sends it, must agree.
 */
export function sameOriginOnly(publicOrigin: string) {
  return async function crossSiteGuard(request: FastifyRequest): Promise<void> {
    const site = request.headers['sec-fetch-site'];
    if (request.headers.origin !== publicOrigin || (site !== undefined && site !== 'same-origin')) {
      throw new Problem('identity.cross_site_refused');
    }
  };
}

/** A grant as these routes answer it: never the refresh token, which goes to the cookie. */
function withoutRefreshToken(grant: SessionGrant) {
  return {
    kind: grant.kind,
    accessToken: grant.accessToken,
    accessTokenExpiresAt: grant.accessTokenExpiresAt,
    sessionExpiresAt: grant.sessionExpiresAt,
  };
}

export const browserSessionRoutes = featureRoutes(async (app, opts: BrowserSessionOptions) => {
  const { sessions, clock, publicOrigin } = opts;
  app.addSchema(schema.BrowserSessionGrantSchema);
  app.addHook('onRequest', sameOriginOnly(publicOrigin));
  // The CORS plugin answers listed origins on every route; here no other origin may ever read an
  // answer (and credentials are never allowed), whatever CORS_ORIGINS says.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.removeHeader('access-control-allow-origin');
    reply.removeHeader('access-control-allow-credentials');
    reply.removeHeader('access-control-expose-headers');
    reply.header('cache-control', 'no-store');
    return payload;
  });

  const cookie = new BrowserSessionCookie(publicOrigin);
  const cookieOf = (request: FastifyRequest) => cookie.refreshToken(request.headers.cookie);
  const refused = () =>
    new Problem('identity.renewal_refused', { headers: { 'set-cookie': cookie.clearing } });
  const keep = (reply: FastifyReply, grant: SessionGrant) => {
    const seconds = Math.floor((Date.parse(grant.sessionExpiresAt) - clock.now().getTime()) / 1000);
    reply.header('set-cookie', cookie.holding(grant.refreshToken, seconds));
    return reply.code(201).send(envelope(withoutRefreshToken(grant)));
  };
  const grantResponse = { 201: Data(Type.Ref(schema.BrowserSessionGrantSchema)) };
  const refusals = ['identity.renewal_refused', 'identity.cross_site_refused'] as const;
  const cookieNote =
    'Cookie-authenticated: refused with 403 identity.cross_site_refused unless Origin is the ' +
    "service's public origin (and Sec-Fetch-Site, when sent, is same-origin).";

  app.post(
    '/browser-session',
    {
      config: limitFor(opts.rateLimit, 'browser-session'),
      schema: {
        tags: ['sessions'],
        summary: "Hand a sign-in's refresh token to the browser's HttpOnly cookie (rotated at once)",
        description:
          'The refresh token of a sign-in the hosted page just made is renewed and the new one is set ' +
          'as the HttpOnly session cookie; the answer carries the access token only. A live session the ' +
          'cookie named before ends (one hosted session per browser). A refused renewal answers ' +
          `401 identity.renewal_refused and clears the cookie. ${cookieNote}`,
        // The refresh token of a sign-in the page just made, handed over once: the renewal's body.
        body: schema.RenewalBody,
        response: responses(grantResponse, [...refusals], { body: true, rateLimited: true }),
      },
    },
    async (request, reply) => {
      try {
        return keep(reply, await sessions.handOver(request.body.refreshToken, cookieOf(request)));
      } catch (err) {
        if (err instanceof Problem && err.code === 'identity.renewal_refused') throw refused();
        throw err;
      }
    },
  );

  app.post(
    '/browser-session/renewals',
    {
      config: limitFor(opts.rateLimit, 'browser-session/renewals'),
      schema: {
        tags: ['sessions'],
        summary: "Renew with the cookie's refresh token: a new access token, the cookie rotated",
        description:
          'Single use like POST /sign-ins/renewals: presenting a spent cookie ends the session. No ' +
          `cookie, or a refused renewal: 401 identity.renewal_refused and the cookie is cleared. ${cookieNote}`,
        response: responses(grantResponse, [...refusals], { rateLimited: true }),
      },
    },
    async (request, reply) => {
      const token = cookieOf(request);
      if (!token) throw refused();
      try {
        return keep(reply, await sessions.renew(token));
      } catch (err) {
        if (err instanceof Problem && err.code === 'identity.renewal_refused') throw refused();
        throw err;
      }
    },
  );

  app.post(
    '/browser-session/sign-outs',
    {
      schema: {
        tags: ['sessions'],
        summary: "End the cookie's session and clear the cookie (204 even without one)",
        description: cookieNote,
        response: responses({ 204: NoContent }, ['identity.cross_site_refused']),
      },
    },
    async (request, reply) => {
      const token = cookieOf(request);
      if (token) await sessions.signOutByRefreshToken(token);
      return reply.header('set-cookie', cookie.clearing).code(204).send();
    },
  );
});
