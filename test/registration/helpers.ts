import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/database.js';

export const SIGN_UPS = '/api/v1/sign-ups';
export const CONFIRMATIONS = '/api/v1/sign-ups/confirmations';

/** Long enough for the policy and absent from the common-password list. */
export const PASSWORD = 'violet-anchor-meadow-42';

export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(5).toString('hex')}@example.com`;
}

export function emailForm(address: string) {
  return { identifierType: 'email' as const, identifier: address };
}

export function signUp(app: FastifyInstance, body: unknown): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: SIGN_UPS, payload: body as object });
}

export function confirm(app: FastifyInstance, body: unknown): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: CONFIRMATIONS, payload: body as object });
}

export { codeIn, lastCode, outbox } from '../helpers/outbox.js';

/** A numeric code of the same length that is certainly not `code`. */
export function otherCode(code: string): string {
  return [...code].map((d) => String((Number(d) + 1) % 10)).join('');
}

export async function identifierRow(db: Db, value: string) {
  const r = await sql<{ id: string; identity_id: string; verified_at: Date | null }>`
    SELECT id, identity_id, verified_at FROM identifiers WHERE value = ${value}`.execute(db);
  return r.rows;
}

export async function challengesOf(db: Db, value: string) {
  const r = await sql<{
    id: string;
    code_hash: string;
    attempts: number;
    spent_at: Date | null;
    revoked_at: Date | null;
    created_at: Date;
  }>`
    SELECT c.id, c.code_hash, c.attempts, c.spent_at, c.revoked_at, c.created_at
    FROM challenges c JOIN identifiers i ON i.id = c.identifier_id
    WHERE i.value = ${value} AND c.purpose = 'sign_up'
    ORDER BY c.created_at, c.id`.execute(db);
  return r.rows;
}

/** Two refusals are the same when status, media type and body bytes are the same. */
export function shape(res: LightMyRequestResponse) {
  return { status: res.statusCode, contentType: res.headers['content-type'], body: res.body };
}

/** A gate every concurrent request waits on, so they all start together. */
export { barrier } from '../helpers/identities.js';
