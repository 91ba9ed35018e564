import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../platform/context.js';
import type { Db } from '../../platform/db/database.js';
import { sessionRequired } from '../../platform/http/problem.js';
import { type SessionState, sessionState } from './repository.js';

export interface SessionPrincipal {
  identityId: string;
  sessionId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: SessionPrincipal;
    /** The row the guard read, for a route whose loader reads more than the session state. */
    sessionRow?: SessionState;
  }
}

/** Reads the session's state by id; a route may read more in the same round trip. */
export type SessionLoader = (db: Db, sessionId: string) => Promise<SessionState | undefined>;

const REFUSAL = sessionRequired;
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;
const MAX_TOKEN = 4096;

/**
 * Interface 5.2: missing header, other scheme, empty value, a token nobody issued, a revoked
 * session and an elevation token used as bearer all get the identical 401. The signature is
 * checked once per token (cached until exp); the session row is read on every request, so a
 * revocation on any instance takes effect at the very next request.
 */
export function requireSession(ctx: AppContext, load: SessionLoader = sessionState) {
  return async function sessionGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || header.length > MAX_TOKEN) throw REFUSAL();
    const m = BEARER.exec(header);
    if (!m) throw REFUSAL();
    const claims = await ctx.tokens.verify(m[1]);
    if (!claims) throw REFUSAL();
    const state = await load(ctx.database.db, claims.sid);
    if (
      !state ||
      state.identity_id !== claims.sub ||
      state.revoked_at !== null ||
      new Date(state.expires_at) <= ctx.clock.now() ||
      state.epoch !== state.identity_epoch
    ) {
      throw REFUSAL();
    }
    request.principal = { identityId: claims.sub, sessionId: claims.sid };
    request.sessionRow = state;
  };
}

export function principalOf(request: FastifyRequest): SessionPrincipal {
  if (!request.principal) throw REFUSAL();
  return request.principal;
}
