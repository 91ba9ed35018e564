import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Problem } from '../problem.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The name of the operator key that authenticated an admin request. */
    operator?: string;
  }
}

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
export function requireAdminKey(keys: readonly AdminKey[]) {
  return async function adminGuard(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const name = operatorFor(keys, request.headers.authorization);
    if (name === undefined) throw unauthorized();
    request.operator = name;
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

/** The audit actor of an admin write: `admin:<key name>`. */
export function operatorOf(request: FastifyRequest): string {
  if (!request.operator) throw unauthorized();
  return `admin:${request.operator}`;
}
