import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Db } from '../../src/platform/db/database.js';
import { bearer } from '../helpers/identities.js';

export const SIGN_INS = '/api/v1/sign-ins';
export const RENEWALS = '/api/v1/sign-ins/renewals';
export const SIGN_OUTS = '/api/v1/sign-outs';
export const EVERYWHERE = '/api/v1/sign-outs/everywhere';
export const CONTEXT = '/api/v1/session/context';
export const HISTORY = '/api/v1/sign-ins/history';

export function signInRaw(app: FastifyInstance, email: string, password: string, remoteAddress?: string) {
  return app.inject({
    method: 'POST',
    url: SIGN_INS,
    payload: { identifierType: 'email', identifier: email, password },
    ...(remoteAddress ? { remoteAddress } : {}),
  });
}

export function renew(app: FastifyInstance, refreshToken: string, remoteAddress?: string) {
  return app.inject({
    method: 'POST',
    url: RENEWALS,
    payload: { refreshToken },
    ...(remoteAddress ? { remoteAddress } : {}),
  });
}

export function signOut(app: FastifyInstance, accessToken: string) {
  return app.inject({ method: 'POST', url: SIGN_OUTS, headers: bearer(accessToken) });
}

export function signOutEverywhere(app: FastifyInstance, accessToken: string) {
  return app.inject({ method: 'POST', url: EVERYWHERE, headers: bearer(accessToken) });
}

export function context(app: FastifyInstance, accessToken: string, headers: Record<string, string> = {}) {
  return app.inject({ method: 'GET', url: CONTEXT, headers: { ...bearer(accessToken), ...headers } });
}

/** What must be identical across the causes of one refusal family (not x-request-id or date). */
export function refusalShape(res: LightMyRequestResponse) {
  return {
    status: res.statusCode,
    contentType: res.headers['content-type'],
    wwwAuthenticate: res.headers['www-authenticate'],
    body: res.body,
  };
}

/** Every cause answers byte-for-byte the same refusal, and it is the named one. */
export function expectIdenticalRefusals(
  causes: Record<string, LightMyRequestResponse>,
  status: number,
  code: string,
): void {
  const entries = Object.entries(causes);
  expect(entries.length).toBeGreaterThan(1);
  const [, first] = entries[0];
  expect(first.statusCode).toBe(status);
  expect(String(first.headers['content-type'])).toMatch(/^application\/problem\+json/);
  expect(first.json()).toMatchObject({ status, code, type: `/problems/${code}` });
  expect(first.json()).not.toHaveProperty('traceId');
  const reference = refusalShape(first);
  for (const [cause, res] of entries) {
    expect({ cause, ...refusalShape(res) }).toEqual({ cause, ...reference });
  }
}

export function expectProblem(res: LightMyRequestResponse, status: number, code: string): void {
  expect({ status: res.statusCode, code: res.json().code }).toEqual({ status, code });
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
}

export interface SessionRow {
  id: string;
  identity_id: string;
  epoch: number;
  generation: number;
  revoked_at: Date | null;
  revoked_reason: string | null;
  expires_at: Date;
}

export async function sessionsOf(db: Db, identityId: string): Promise<SessionRow[]> {
  const r = await sql<SessionRow>`
    SELECT id, identity_id, epoch, generation, revoked_at, revoked_reason, expires_at
    FROM sessions WHERE identity_id = ${identityId} ORDER BY created_at, id`.execute(db);
  return r.rows;
}

export async function sessionRow(db: Db, sessionId: string): Promise<SessionRow> {
  const r = await sql<SessionRow>`
    SELECT id, identity_id, epoch, generation, revoked_at, revoked_reason, expires_at
    FROM sessions WHERE id = ${sessionId}`.execute(db);
  if (r.rows.length !== 1) throw new Error(`no session ${sessionId}`);
  return r.rows[0];
}

export async function epochOf(db: Db, identityId: string): Promise<number> {
  const r = await sql<{ session_epoch: number }>`
    SELECT session_epoch FROM identities WHERE id = ${identityId}`.execute(db);
  return r.rows[0].session_epoch;
}

/** The decoded (unverified) JOSE header and payload of a compact JWT. */
export function decodeJwt(token: string): {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
} {
  const [h, p] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString('utf8')),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString('utf8')),
  };
}

/** The session id an access token names. */
export function sidOf(accessToken: string): string {
  return decodeJwt(accessToken).payload.sid as string;
}

/** An identity whose only identifier is unverified, holding a password (a pending registration). */
export async function createUnverified(
  db: Db,
  now: Date,
  passwordHash: string,
): Promise<{ identityId: string; email: string }> {
  const identityId = randomUUID();
  const email = `unverified-${identityId.slice(0, 8)}@example.com`;
  await db.transaction().execute(async (trx) => {
    await sql`INSERT INTO identities (id, created_at, password_hash, password_changed_at)
              VALUES (${identityId}, ${now}, ${passwordHash}, ${now})`.execute(trx);
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${identityId}, 'email', ${email}, ${now}, NULL)`.execute(trx);
  });
  return { identityId, email };
}

/** An identity with a verified identifier and no password at all. */
export async function createPasswordless(db: Db, now: Date): Promise<{ identityId: string; email: string }> {
  const identityId = randomUUID();
  const email = `nopassword-${identityId.slice(0, 8)}@example.com`;
  await db.transaction().execute(async (trx) => {
    await sql`INSERT INTO identities (id, created_at) VALUES (${identityId}, ${now})`.execute(trx);
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${identityId}, 'email', ${email}, ${now}, ${now})`.execute(trx);
  });
  return { identityId, email };
}
