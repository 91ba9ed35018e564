import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { decodeJwt } from 'jose';
import { expect } from 'vitest';
import { insertMembership } from '../../src/features/organizations/repository.js';
import type { TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Grant, type Person, signIn } from '../helpers/identities.js';
import { CONTEXT } from '../sessions/support.js';

export const ORGS = '/api/v1/organizations';
export const SWITCH = '/api/v1/session/active-organization';

export interface Member {
  person: Person;
  grant: Grant;
  token: string;
}

/** A fresh verified person, signed in. */
export async function member(t: TestApp): Promise<Member> {
  const person = await createPerson(t.ctx);
  const grant = await signIn(t.app, person);
  return { person, grant, token: grant.accessToken };
}

export function uniqueSlug(prefix = 'org'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export function call(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
  url: string,
  token: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { ...bearer(token), ...headers },
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
}

/** Creates an organization through the route; the caller is its owner. */
export async function createOrganization(
  t: TestApp,
  token: string,
  name = 'Acme',
): Promise<{ id: string; slug: string }> {
  const slug = uniqueSlug();
  const res = await call(t.app, 'POST', ORGS, token, { name, slug });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().data.id as string, slug };
}

/** Adds a membership straight to the database (invitations are a later phase). */
export async function join(
  t: TestApp,
  organizationId: string,
  identityId: string,
  role: string,
): Promise<void> {
  await insertMembership(t.ctx.database.db, { organizationId, identityId, role, now: t.clock.now() });
}

export function setRole(
  app: FastifyInstance,
  token: string,
  organizationId: string,
  identityId: string,
  role: string,
) {
  return call(app, 'PUT', `${ORGS}/${organizationId}/members/${identityId}/role`, token, { role });
}

export function remove(app: FastifyInstance, token: string, organizationId: string, identityId: string) {
  return call(app, 'DELETE', `${ORGS}/${organizationId}/members/${identityId}`, token);
}

export function switchTo(app: FastifyInstance, token: string, organizationId: string | null) {
  return call(app, 'POST', SWITCH, token, { organizationId });
}

/** Whether the session context marks the organization active (undefined when not a member). */
export async function activeIn(app: FastifyInstance, token: string, organizationId: string) {
  const res = await call(app, 'GET', CONTEXT, token);
  return (res.json().data.organizations as { id: string; active: boolean }[]).find(
    (o) => o.id === organizationId,
  )?.active;
}

/** The organization claims of an access token. */
export function orgClaims(token: string) {
  const c = decodeJwt(token) as Record<string, unknown>;
  return { org_id: c.org_id, org_role: c.org_role, org_permissions: c.org_permissions };
}

export function expectProblem(res: LightMyRequestResponse, status: number, code: string): void {
  expect({ status: res.statusCode, code: res.json().code }, res.body).toEqual({ status, code });
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
}
