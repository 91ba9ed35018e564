import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../platform/context.js';
import { Problem } from '../../platform/http/problem.js';
import { sessionState } from './repository.js';

export interface SessionPrincipal {
  identityId: string;
  sessionId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: SessionPrincipal;
  }
}

// The same header on every refusal, so no cause is told apart by its headers either.
const REFUSAL = () => new Problem('identity.session_required', { headers: { 'www-authenticate': 'Bearer' } });
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;
const MAX_TOKEN = 4096;

/**
 * Interface 5.2: missing header, other scheme, empty value, a token nobody issued, a revoked
 * session and an elevation token used as bearer all get the identical 401. The signature is
 * checked once per token (cached until exp); the session row is read on every request, so a
 * revocation on any instance takes effect at the very next request.
 */
export function requireSession(ctx: AppContext) {
  return async function sessionGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || header.length > MAX_TOKEN) throw REFUSAL();
    const m = BEARER.exec(header);
    if (!m) throw REFUSAL();
    const claims = await ctx.tokens.verify(m[1]);
    if (!claims) throw REFUSAL();
    const state = await sessionState(ctx.database.db, claims.sid);
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
  };
}

export function principalOf(request: FastifyRequest): SessionPrincipal {
  if (!request.principal) throw REFUSAL();
  return request.principal;
}
