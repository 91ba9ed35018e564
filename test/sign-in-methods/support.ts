import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../src/context.js';
import type { TestApp } from '../helpers/app.js';
import { bearer } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';

export function uniqueEmail(label = 'm'): string {
  return `${label}-${randomBytes(5).toString('hex')}@example.com`;
}

export function addMethod(
  app: FastifyInstance,
  headers: Record<string, string>,
  body: object,
): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/api/v1/sign-in-methods', headers, payload: body });
}

export function confirmMethod(
  app: FastifyInstance,
  headers: Record<string, string>,
  code: string,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/v1/sign-in-methods/confirmations',
    headers,
    payload: { code },
  });
}

export function removeMethod(
  app: FastifyInstance,
  headers: Record<string, string>,
  id: string,
): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: `/api/v1/sign-in-methods/${id}/removals`, headers });
}

export interface MethodItem {
  id: string;
  kind: string;
  display: string | null;
  verifiedAt: string;
  lastUsedAt: string | null;
}

export async function listMethods(app: FastifyInstance, accessToken: string): Promise<MethodItem[]> {
  const res = await app.inject({
    method: 'GET',
    url: '/api/v1/sign-in-methods',
    headers: bearer(accessToken),
  });
  if (res.statusCode !== 200) throw new Error(`list failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

/** Adds an email address through the routes: request, read the code, confirm. */
export async function addEmail(
  t: TestApp,
  headers: Record<string, string>,
  address = uniqueEmail('added'),
): Promise<string> {
  const res = await addMethod(t.app, headers, { identifierType: 'email', identifier: address });
  if (res.statusCode !== 201) throw new Error(`add failed: ${res.statusCode} ${res.body}`);
  const code = await waitForCode(t.config.dataDir, address, messagesTo(t.config.dataDir, address).length);
  const confirm = await confirmMethod(t.app, headers, code);
  if (confirm.statusCode !== 204) throw new Error(`confirm failed: ${confirm.statusCode} ${confirm.body}`);
  return address;
}

/** A further verified address written straight to the database (fixture for removal tests). */
export async function insertVerifiedEmail(ctx: AppContext, identityId: string, address = uniqueEmail('fx')) {
  const id = randomUUID();
  const now = ctx.clock.now();
  await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
            VALUES (${id}, ${identityId}, 'email', ${address}, ${now}, ${now})`.execute(ctx.database.db);
  return { id, address };
}

export async function identifierIdOf(ctx: AppContext, address: string): Promise<string> {
  const r = await sql<{ id: string }>`
    SELECT id FROM identifiers WHERE value = ${address} AND removed_at IS NULL`.execute(ctx.database.db);
  return r.rows[0].id;
}

export const CONFIRMATION_REFUSED = {
  type: '/problems/identity.sign_in_method_confirmation_refused',
  title: 'Confirmation refused',
  status: 422,
  detail: 'The sign-in method confirmation was refused.',
  code: 'identity.sign_in_method_confirmation_refused',
  retryable: false,
};

export const METHOD_LOCKED = {
  type: '/problems/identity.sign_in_method_locked',
  title: 'Account locked',
  status: 423,
  detail: 'The account is locked after repeated failures.',
  code: 'identity.sign_in_method_locked',
  retryable: false,
};

export const METHOD_NOT_FOUND = {
  type: '/problems/identity.sign_in_method_not_found',
  title: 'Sign-in method not found',
  status: 404,
  detail: 'No such sign-in method.',
  code: 'identity.sign_in_method_not_found',
  retryable: false,
};

export const LAST_METHOD = {
  type: '/problems/identity.last_sign_in_method',
  title: 'Last sign-in method',
  status: 409,
  detail: 'Removing this method would leave no way in.',
  code: 'identity.last_sign_in_method',
  retryable: false,
};

export const IDENTIFIER_TAKEN = {
  type: '/problems/identity.identifier_taken',
  title: 'Identifier taken',
  status: 409,
  detail: 'The identifier is already in use.',
  code: 'identity.identifier_taken',
  retryable: false,
};

export const ELEVATION_REQUIRED = {
  type: '/problems/identity.elevation_required',
  title: 'Elevation required',
  status: 403,
  detail: 'A live elevation for this session is required.',
  code: 'identity.elevation_required',
  retryable: false,
};
