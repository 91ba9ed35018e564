import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Problem } from '../problem.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The name of the operator key that authenticated an admin request. */
    operator?: string;
    /** The operator identity whose console access token authenticated an admin request. */
    operatorIdentity?: OperatorIdentity;
  }
}

/** An operator signed in with their identity (the console's access token) and their role now. */
export interface OperatorIdentity {
  identityId: string;
  role: string;
  /** When the account session the token was given in was opened (with its second factor). */
  signedInAt: Date;
}

/**
 * Reads a bearer value that is no operator key as a console access token: the operator it stands
 * for, or undefined (not a live token of the console, not a second-factor session, no role).
 */
export type OperatorTokenCheck = (token: string) => Promise<OperatorIdentity | undefined>;

/** An operator's API key as configured: its name (the audit actor) and the SHA-256 of the key. */
export interface AdminKey {
  name: string;
  /** 32 bytes: SHA-256 of the raw key; the raw key never sits in configuration. */
  hash: Buffer;
}

// A key is printable ASCII without spaces; far longer than any key admin:key prints is refused.
const BEARER = /^Bearer ([\x21-\x7e]{1,256})$/;

/** The one refusal of the admin listener: same status, body and headers whatever the cause. */
function unauthorized(): Problem {
  return new Problem('admin.unauthorized', {
    headers: { 'www-authenticate': 'Bearer', 'cache-control': 'no-store' },
  });
}

/**
 * The admin listener's one guard, an onRequest hook of its root instance so the not-found handler
 * stands behind it too (a made-up path answers what a real one does). The presented key is hashed (SHA-256, as
 * ADMIN_API_KEYS stores it) and compared with every configured hash in constant time, with no
 * early exit, so the time taken tells neither which key nor whether any matched. A missing header,
 * another scheme, a wrong key and a key removed from ADMIN_API_KEYS all answer the identical 401.
 */
export function requireAdminKey(keys: readonly AdminKey[], token?: OperatorTokenCheck) {
  return async function adminGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    const name = operatorFor(keys, header);
    if (name !== undefined) {
      request.operator = name;
      return;
    }
    // Not a key: an operator's console access token, when the listener takes them. Its failures
    // (unknown, expired, another client's, a single-factor session, no role) are the same 401.
    const m = token && typeof header === 'string' ? BEARER.exec(header) : null;
    const identity = m && token ? await token(m[1]) : undefined;
    if (identity === undefined) throw unauthorized();
    request.operatorIdentity = identity;
  };
}

/**
 * The role check of an admin request, after the guard (an onRequest hook of the root instance, so
 * routing has named the route): a key may do everything; an operator identity only what its role
 * allows for the route (`allowed`), else `403 admin.forbidden`. A path no route matches is left to
 * the not-found handler (its 404 says nothing a route's 403 would not).
 */
export function requireRole(allowed: (role: string, method: string, url: string) => boolean) {
  return async function roleGuard(request: FastifyRequest): Promise<void> {
    const identity = request.operatorIdentity;
    if (!identity) return;
    const url = request.routeOptions.url;
    if (url === undefined) return;
    if (!allowed(identity.role, request.method, url)) throw new Problem('admin.forbidden');
  };
}

/** The same check for the router's own refusals, which run no hook (createServer's guard). */
export function adminRefusal(keys: readonly AdminKey[]) {
  return (request: FastifyRequest): Problem | undefined =>
    operatorFor(keys, request.headers.authorization) === undefined ? unauthorized() : undefined;
}

function operatorFor(keys: readonly AdminKey[], header: unknown): string | undefined {
  const m = typeof header === 'string' ? BEARER.exec(header) : null;
  const digest = createHash('sha256')
    .update(m ? m[1] : '')
    .digest();
  let matched: string | undefined;
  for (const key of keys) {
    const equal = timingSafeEqual(digest, key.hash);
    if (equal && matched === undefined) matched = key.name;
  }
  return m ? matched : undefined;
}

/** The audit actor of an admin act: `admin:<key name>`, or `operator:<identity id>` for a console token. */
export function operatorOf(request: FastifyRequest): string {
  if (request.operatorIdentity) return `operator:${request.operatorIdentity.identityId}`;
  if (!request.operator) throw unauthorized();
  return `admin:${request.operator}`;
}
