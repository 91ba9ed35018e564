import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/database.js';

/**
 * Guessable (zxcvbn) and long enough for the schema: the policy, not the bounds, refuses it. Not in
 * the bundled breach list (password1234 and unbelievable are: breached_password, not weak_password).
 */
export const COMMON_PASSWORD = 'password12345';
export const NEW_PASSWORD = 'lantern-orchard-velvet-73';

/** Lets fire-and-forget deliveries run before asserting that nothing was sent. */
export function settle(ms = 150): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export { otherCode } from '../registration/helpers.js';

export function post(
  app: FastifyInstance,
  url: string,
  payload?: object,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: `/api/v1${url}`, payload, headers });
}

export function shape(res: LightMyRequestResponse) {
  return { status: res.statusCode, contentType: res.headers['content-type'], body: res.body };
}

export async function auditNames(db: Db, name: string, target?: string): Promise<number> {
  const r = target
    ? await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM audit_records WHERE name = ${name} AND target = ${target}`.execute(db)
    : await sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_records WHERE name = ${name}`.execute(db);
  return r.rows[0].n;
}

export const PASSWORD_CHANGE_REFUSED = {
  type: '/problems/identity.password_change_refused',
  title: 'Password change refused',
  status: 422,
  detail: 'The password change was refused.',
  code: 'identity.password_change_refused',
  retryable: false,
};

export const PASSWORD_RECOVERY_REFUSED = {
  type: '/problems/identity.password_recovery_refused',
  title: 'Password recovery refused',
  status: 422,
  detail: 'The password recovery was refused.',
  code: 'identity.password_recovery_refused',
  retryable: false,
};

export const SESSION_REQUIRED = {
  type: '/problems/identity.session_required',
  title: 'Session required',
  status: 401,
  detail: 'A valid session is required.',
  code: 'identity.session_required',
  retryable: false,
};
