import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import type { TestApp } from '../helpers/app.js';
import { call, createOrganization, type Member, member, ORGS } from '../organizations/support.js';

export const SCIM = '/scim/v2';
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** An organization with an owner, a verified domain (by the operators' route) and a SCIM token. */
export interface Tenant {
  owner: Member;
  orgId: string;
  domain: string;
  token: string;
}

export const uniqueDomain = () => `d${randomBytes(4).toString('hex')}.example.com`;

export async function tenant(t: TestApp, opts: { verified?: boolean } = {}): Promise<Tenant> {
  const owner = await member(t);
  const org = await createOrganization(t, owner.token);
  const domain = uniqueDomain();
  const claim = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, { domain });
  expect(claim.statusCode, claim.body).toBe(201);
  if (opts.verified !== false) {
    const v = await t.admin!.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.id}/domains/${claim.json().data.id}/verifications`,
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(v.statusCode, v.body).toBe(200);
  }
  const created = await call(t.app, 'POST', `${ORGS}/${org.id}/scim-tokens`, owner.token, { name: 'Okta' });
  expect(created.statusCode, created.body).toBe(201);
  return { owner, orgId: org.id, domain, token: created.json().data.token as string };
}

/** One SCIM request with the directory's media type. */
export function scim(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url: `${SCIM}${path}`,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
}

export function expectScimError(res: LightMyRequestResponse, status: number, scimType?: string): void {
  expect(String(res.headers['content-type'])).toMatch(/^application\/scim\+json/);
  const body = res.json();
  expect({ status: res.statusCode, scimType: body.scimType }, res.body).toEqual({ status, scimType });
  expect(body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
  expect(body.status).toBe(String(status));
  expect(typeof body.detail).toBe('string');
}

export function newUser(domain: string, extra: Record<string, unknown> = {}) {
  const local = `u${randomBytes(4).toString('hex')}`;
  return {
    schemas: [USER_SCHEMA],
    userName: `${local}@${domain}`,
    name: { givenName: 'Ada', familyName: 'Lovelace' },
    emails: [{ primary: true, value: `${local}@${domain}`, type: 'work' }],
    displayName: 'Ada Lovelace',
    locale: 'en-US',
    externalId: `00u${randomBytes(6).toString('hex')}`,
    groups: [],
    password: 'ignored-by-the-service-1',
    active: true,
    ...extra,
  };
}

export async function createUser(t: TestApp, tn: Tenant, extra: Record<string, unknown> = {}) {
  const res = await scim(t.app, 'POST', '/Users', tn.token, newUser(tn.domain, extra));
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Record<string, unknown> & { id: string; userName: string; meta: { version: string } };
}
