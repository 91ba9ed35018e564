import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AppContext } from './context.js';
import { consolePageRoutes } from './features/account-ui/console.js';
import { adminRoutes } from './features/admin/routes.js';
import { eventAdminRoutes } from './features/events/operators/routes.js';
import { webhookEndpointRoutes } from './features/events/webhooks/operators/routes.js';
import { healthAdminRoutes } from './features/health/operators/routes.js';
import { importAdminRoutes } from './features/imports/routes.js';
import { oidcClientAdminRoutes } from './features/oidc/operators/routes.js';
import {
  type ConsoleProviderCalls,
  consoleRoutes,
  isConsolePath,
} from './features/operators/console-routes.js';
import { permissionOf, roleAllows } from './features/operators/permissions.js';
import { operatorRoutes } from './features/operators/routes.js';
import { OperatorService } from './features/operators/service.js';
import { organizationAdminRoutes } from './features/organizations/operators/routes.js';
import { scimTokenAdminRoutes } from './features/scim/token-routes.js';
import { ssoTestAdminRoutes } from './features/sso/admin-routes.js';
import { ssoRequirementAdminRoutes } from './features/sso/requirement/admin-routes.js';
import { adminRefusal, requireAdminKey, requireRole } from './platform/http/admin-auth.js';
import { problemResponse } from './platform/http/schemas.js';
import { createServer, installPlatformPolicies } from './platform/http/server.js';
import type { AccessLog } from './platform/log/logger.js';

export const ADMIN_PREFIX = '/admin/v1';

declare module 'fastify' {
  interface FastifyInstance {
    /** The admin listener's routes, `METHOD url` as registered (HEAD left out): what roles are checked on. */
    adminRoutes?: string[];
  }
}

/**
 * The operators' listener (ADMIN_PORT): a Fastify instance of its own, with the public one's
 * platform policies (Problem Details, request ids, strict validation, JSON bodies, access lines),
 * serving only /admin/v1 and its own OpenAPI document, every request behind an operator key
 * (platform/http/admin-auth.ts), one for a route that does not exist included. Nothing of it is
 * registered on the public instance, so the public port answers 404 for /admin/v1/...; it shares
 * the context (database, audit chain, cursors) with the public app.
 *
 * Beside the keys it takes the access tokens of the operators' console (an identity of this
 * service with a role, signed in with a second factor: features/operators/service.ts), each limited
 * to what its role allows (features/operators/permissions.ts). Every route must be in that table:
 * the listener refuses to start with one it lacks.
 */
export async function buildAdminApp(
  ctx: AppContext,
  logger: Logger,
  access: AccessLog,
  provider?: ConsoleProviderCalls,
): Promise<FastifyInstance> {
  const admin = createServer(ctx.config, logger.child({ listener: 'admin' }), {
    guard: adminRefusal(ctx.config.admin.keys),
  });
  installPlatformPolicies(admin, access.forListener('admin'));
  const operators = new OperatorService({
    config: ctx.config,
    database: ctx.database,
    clock: ctx.clock,
    audit: ctx.audit,
    consoleToken: (value) => ctx.oidc.consoleToken(value),
  });
  // On the root instance, so it also guards the not-found handler: a caller without a key gets the
  // one 401 for a made-up path as for a real one, and learns no route of the listener.
  const guard = requireAdminKey(ctx.config.admin.keys, (token) => operators.authenticate(token));
  // The console's sign-in and session routes (features/operators/console-routes.ts) are open:
  // they are how an operator comes to hold a token. Everything else needs a key or a token.
  admin.addHook('onRequest', async (request, reply) => {
    if (!isConsolePath(request.url)) await guard(request, reply);
  });
  admin.addHook('onRequest', requireRole(roleAllows));
  // A route no role is classified for would be open to owners only by accident, or to nobody:
  // refused at start-up instead (test/admin/operator-roles.test.ts walks the table).
  const routes: string[] = [];
  admin.decorate('adminRoutes', routes);
  admin.addHook('onRoute', (route) => {
    if (isConsolePath(route.url)) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      routes.push(`${method} ${route.url}`);
      if (permissionOf(method, route.url) === undefined)
        throw new Error(
          `admin route ${method} ${route.url} has no operator permission (features/operators/permissions.ts)`,
        );
    }
    // Every documented route may answer an operator whose role does not allow it.
    const response = (route.schema as { response?: Record<number, unknown> } | undefined)?.response;
    if (response && response[403] === undefined) response[403] = problemResponse(['admin.forbidden']);
  });
  // Every answer of this listener, a 404 outside /admin/v1 included: none may differ by path.
  admin.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store');
    return payload;
  });
  await admin.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Identity Service: operators',
        version: '2.0.0',
        description:
          "Find, read, disable, enable, unlock, sign out and erase identities; read the sealed audit trail; manage the OpenID Provider's clients; manage organizations and their members.",
      },
      servers: [{ url: `http://${ctx.config.admin.host}:${ctx.config.admin.port}` }],
      components: {
        securitySchemes: {
          adminKey: {
            type: 'http',
            scheme: 'bearer',
            description:
              "An operator key made by `npm run admin:key -- NAME`, listed in ADMIN_API_KEYS; or an access token of the operators' console (its built-in OpenID client `console`) of an identity with an operator role, signed in with a second factor, limited to what its role allows (403 admin.forbidden)",
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) || `def-${i}` },
  });
  await admin.register(adminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(oidcClientAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(organizationAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(scimTokenAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(ssoRequirementAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(ssoTestAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(eventAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(webhookEndpointRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(operatorRoutes, { operators, prefix: ADMIN_PREFIX });
  if (provider) {
    await admin.register(consoleRoutes, {
      config: ctx.config,
      clock: ctx.clock,
      sealer: ctx.sealer,
      operators,
      provider,
    });
    // The console's pages (ui/console/): on this listener only, never on the public port.
    await admin.register(consolePageRoutes);
  }
  await admin.register(importAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(healthAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  // Behind the key like every admin route: it names every route the listener hides from strangers.
  admin.get(`${ADMIN_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => admin.swagger());
  return admin;
}
