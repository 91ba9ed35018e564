import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { sha256Hex } from '../crypto/tokens.js';
import { Problem, type ProblemCode } from '../problem.js';
import { sessionRequired } from './problem.js';
import { routePatternOf } from './route-pattern.js';

export interface SessionPrincipal {
  identityId: string;
  sessionId: string;
}

/** What the session guard needs to know of a session: its row joined to its identity's epoch. */
export interface SessionState {
  identityId: string;
  epoch: number;
  identityEpoch: number;
  expiresAt: Date;
  revokedAt: Date | null;
  /**
   * The session's active organization and the identity's CURRENT role in it, read in the same
   * statement on every request (null without one, or when the organization is disabled): routes
   * acting in the active organization decide by this, never by a token's claims.
   */
  activeOrganizationId: string | null;
  organizationRole: string | null;
}

/** What the elevation guard needs to know of an elevation token. */
export interface ElevationState {
  identityId: string;
  sessionId: string;
  expiresAt: Date;
  sessionRevokedAt: Date | null;
}

/** Reads a session's state by id; a route may read more in the same round trip (the context). */
export type SessionLoader<S extends SessionState = SessionState> = (
  sessionId: string,
) => Promise<S | undefined>;

/** The guards' collaborators, built once at wiring (app.ts): the platform knows no feature. */
export interface AuthDeps {
  clock: Clock;
  /** Claims of a valid, unexpired access token, or null. Never throws. */
  verifyAccessToken(token: string): Promise<{ sub: string; sid: string } | null>;
  loadSession: SessionLoader;
  /** The elevation whose token hashes to this value. */
  findElevation(tokenHash: string): Promise<ElevationState | undefined>;
}

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
  /** Told of the session a request opened, so work can follow once the answer has gone out. */
  opened?: (identityId: string, sessionId: string) => void;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: SessionPrincipal;
    /** The row the guard read, for a route whose loader reads more than the session state. */
    sessionRow?: SessionState;
    /** The session this request opened (a sign-in), once it is written. */
    openedSession?: SessionPrincipal;
  }
}

export const ELEVATION_HEADER = 'x-elevation-token';
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;
const MAX_TOKEN = 4096;
// An elevation token is 32 random bytes in base64url (43 characters); anything far longer is
// refused without hashing it.
const MAX_ELEVATION_TOKEN = 256;

/**
 * The session guard (docs/decisions.md, "Platform"): missing header, other scheme, empty value, a
 * token nobody issued, a revoked session and an elevation token used as bearer all get the
 * identical 401. The signature is checked once per token (cached until exp); the session row is
 * read on every request, so a revocation on any instance takes effect at the very next request.
 */
export function requireSession(deps: AuthDeps, load: SessionLoader = deps.loadSession) {
  return async function sessionGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || header.length > MAX_TOKEN) throw sessionRequired();
    const m = BEARER.exec(header);
    if (!m) throw sessionRequired();
    const claims = await deps.verifyAccessToken(m[1]);
    if (!claims) throw sessionRequired();
    const state = await load(claims.sid);
    if (
      !state ||
      state.identityId !== claims.sub ||
      state.revokedAt !== null ||
      new Date(state.expiresAt) <= deps.clock.now() ||
      state.epoch !== state.identityEpoch
    ) {
      throw sessionRequired();
    }
    request.principal = { identityId: claims.sub, sessionId: claims.sid };
    request.sessionRow = state;
  };
}

/** What a route behind requireSession can refuse before its own work: 401. */
export const SESSION_REFUSALS: ProblemCode[] = ['identity.session_required'];

/** What a route behind requireElevation can refuse before its own work: 401, then 403. */
export const ELEVATION_REFUSALS: ProblemCode[] = [...SESSION_REFUSALS, 'identity.elevation_required'];

/**
 * The elevation guard (docs/api.md, "1. Step up: get an elevation token"): runs after
 * requireSession (a dead session has already answered 401). A missing, unknown or expired
 * elevation, one minted for another session or identity, and one whose session has ended all get
 * the identical 403 identity.elevation_required.
 */
export function requireElevation(deps: AuthDeps) {
  return async function elevationGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = principalOf(request);
    const header = request.headers[ELEVATION_HEADER];
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_ELEVATION_TOKEN) {
      throw new Problem('identity.elevation_required');
    }
    const row = await deps.findElevation(sha256Hex(header));
    if (
      !row ||
      row.sessionId !== principal.sessionId ||
      row.identityId !== principal.identityId ||
      row.sessionRevokedAt !== null ||
      new Date(row.expiresAt) <= deps.clock.now()
    ) {
      throw new Problem('identity.elevation_required');
    }
  };
}

export function principalOf(request: FastifyRequest): SessionPrincipal {
  if (!request.principal) throw sessionRequired();
  return request.principal;
}

/** Where a request came from, as history records it (the user agent bounded). */
export function requestMeta(request: FastifyRequest): RequestMeta {
  const ua = request.headers['user-agent'];
  return {
    ip: request.ip ?? null,
    userAgent: typeof ua === 'string' ? ua.slice(0, 512) : null,
    opened: (identityId, sessionId) => {
      request.openedSession = { identityId, sessionId };
    },
  };
}

/**
 * A list route's cursor scope: its own path and the caller, so a cursor is refused on any other
 * route or for anyone else.
 */
export function listScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: principalOf(request).identityId };
}

/**
 * The guards a feature's routes stand behind, built once per plugin, with the OpenAPI security
 * each one implies (so the document cannot drift from the check). `elevated` runs the session guard
 * first (a dead session answers 401), then the elevation guard (403), as docs/api.md, "1. Step up:
 * get an elevation token" says.
 */
export function guards(deps: AuthDeps) {
  const session = requireSession(deps);
  return {
    session,
    elevated: [session, requireElevation(deps)],
    security: { session: [{ bearer: [] }], elevated: [{ bearer: [], elevation: [] }] },
  };
}
