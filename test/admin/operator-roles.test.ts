import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdminApp } from '../../src/admin-app.js';
import { ROUTE_PERMISSIONS } from '../../src/features/operators/permissions.js';
import { createLogger } from '../../src/platform/log/logger.js';
import { ADMIN_KEY, adminRequest } from '../helpers/admin.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { type OidcFixture, oidcFixture } from '../helpers/oidc.js';
import { consoleAccessToken, withAuthenticator } from '../helpers/operators.js';
import { DEFAULT_POLICY, enrolVerified } from '../second-factors/helpers.js';

/*
 * Every route of the admin listener, from the listener's own route list (a new route is in it the
 * moment it is registered), against every role: allowed, or 403 admin.forbidden before anything is
 * read or validated. What each role may do is written here from its definition (docs/admin.md,
 * "Operators"), not read from the permission table the listener uses, so the table is tested.
 */

const OWNER_EMAIL = 'table-owner@example.com';
type Role = 'owner' | 'support' | 'auditor';

/** The roles as the console's definition states them. */
function expected(role: Role, method: string, url: string): boolean {
  if (role === 'owner') return true;
  if (url === '/admin/v1/openapi.json' || url === '/admin/v1/imports/schema') return true;
  // auditor: the audit trail alone (not the health page, nor the webhooks).
  if (role === 'auditor') return url.startsWith('/admin/v1/audit-records');
  // support: every read but the export of every identity (the health page and the webhook endpoints
  // and their deliveries included); of the acts only unlocking and ending sessions.
  return (
    (method === 'GET' && url !== '/admin/v1/exports/identities') ||
    url === '/admin/v1/identities/:id/lock-clearances' ||
    url === '/admin/v1/identities/:id/session-revocations'
  );
}

let f: OidcFixture;
const tokens = {} as Record<Role, string>;
let routes: string[];

beforeAll(async () => {
  f = await oidcFixture({ CONSOLE_OPERATORS: `owner:${OWNER_EMAIL}` });
  const owner = await createPerson(f.t.ctx, OWNER_EMAIL);
  const factor = await enrolVerified(f.t, owner, await signIn(f.t.app, owner), DEFAULT_POLICY);
  tokens.owner = await consoleAccessToken(f, { person: owner, factor });
  for (const role of ['support', 'auditor'] as const) {
    const c = await withAuthenticator(f);
    const granted = await f.t.admin!.inject({
      method: 'PUT',
      url: `/admin/v1/operators/${c.person.identityId}`,
      headers: bearer(ADMIN_KEY),
      payload: { role },
    });
    expect(granted.statusCode, granted.body).toBe(200);
    tokens[role] = await consoleAccessToken(f, c);
  }
  routes = [...(f.t.admin!.adminRoutes ?? [])].sort();
});
afterAll(() => f.close());

/** The route called with ids no record has: an allowed write finds nothing to change. */
function call(route: string, token: string) {
  const [method, url] = route.split(' ');
  return f.t.admin!.inject({
    method: method as 'GET',
    url: url.replace(/:\w+/g, () => randomUUID()),
    headers: bearer(token),
  });
}

describe('route × role', () => {
  it("the listener's route list is the permission table's, every route of the OpenAPI document in it", async () => {
    expect(routes.length).toBeGreaterThan(40);
    expect(routes).toEqual(Object.keys(ROUTE_PERMISSIONS).sort());
    const doc = (await adminRequest(f.t.admin!, 'GET', '/openapi.json')).json();
    for (const [path, item] of Object.entries(doc.paths as Record<string, object>)) {
      for (const method of Object.keys(item)) {
        expect(routes, `${method} ${path}`).toContain(
          `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`,
        );
      }
    }
  });

  for (const role of ['owner', 'support', 'auditor'] as const) {
    it(`${role}: each route allowed or 403 as the role's definition says`, async () => {
      const forbidden = new Set<string>();
      const outcomes: string[] = [];
      for (const route of routes) {
        const r = await call(route, tokens[role]);
        expect(r.statusCode, route).not.toBe(401);
        outcomes.push(
          `${route} ${r.statusCode === 403 && r.json().code === 'admin.forbidden' ? 'forbidden' : 'allowed'}`,
        );
        if (r.statusCode === 403 && r.json().code === 'admin.forbidden') forbidden.add(r.body);
      }
      expect(outcomes).toEqual(
        routes.map((route) => {
          const [method, url] = route.split(' ');
          return `${route} ${expected(role, method, url) ? 'allowed' : 'forbidden'}`;
        }),
      );
      // One refusal, byte for byte, whatever the route.
      expect(forbidden.size).toBeLessThanOrEqual(1);
      if (role === 'owner') expect(forbidden.size).toBe(0);
      else expect(forbidden.size).toBe(1);
    });
  }

  it('a key may call every route', async () => {
    for (const route of routes) {
      const r = await call(route, ADMIN_KEY);
      expect([401, 403], route).not.toContain(r.statusCode);
    }
  });

  it('the listener refuses to start with a route the permission table lacks', async () => {
    const { logger, access } = createLogger('silent');
    const admin = await buildAdminApp(f.t.ctx, logger, access);
    expect(() => admin.get('/admin/v1/unclassified', async () => ({}))).toThrow(/no operator permission/);
    await admin.close();
  });
});
