import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AppContext } from './context.js';
import { adminRoutes } from './features/admin/routes.js';
import { eventAdminRoutes } from './features/events/operators/routes.js';
import { webhookEndpointRoutes } from './features/events/webhooks/operators/routes.js';
import { importAdminRoutes } from './features/imports/routes.js';
import { oidcClientAdminRoutes } from './features/oidc/operators/routes.js';
import { organizationAdminRoutes } from './features/organizations/operators/routes.js';
import { adminRefusal, requireAdminKey } from './platform/http/admin-auth.js';
import { createServer, installPlatformPolicies } from './platform/http/server.js';
import type { AccessLog } from './platform/log/logger.js';

export const ADMIN_PREFIX = '/admin/v1';

/**
 * The operators' listener (ADMIN_PORT): a Fastify instance of its own, with the public one's
 * platform policies (Problem Details, request ids, strict validation, JSON bodies, access lines),
 * serving only /admin/v1 and its own OpenAPI document, every request behind an operator key
 * (platform/http/admin-auth.ts), one for a route that does not exist included. Nothing of it is
 * registered on the public instance, so the public port answers 404 for /admin/v1/...; it shares
 * the context (database, audit chain, cursors) with the public app.
 */
export async function buildAdminApp(
  ctx: AppContext,
  logger: Logger,
  access: AccessLog,
): Promise<FastifyInstance> {
  const admin = createServer(ctx.config, logger.child({ listener: 'admin' }), {
    guard: adminRefusal(ctx.config.admin.keys),
  });
  installPlatformPolicies(admin, access.forListener('admin'));
  // On the root instance, so it also guards the not-found handler: a caller without a key gets the
  // one 401 for a made-up path as for a real one, and learns no route of the listener.
  admin.addHook('onRequest', requireAdminKey(ctx.config.admin.keys));
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
            description: 'An operator key made by `npm run admin:key -- NAME`, listed in ADMIN_API_KEYS',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) || `def-${i}` },
  });
  await admin.register(adminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(oidcClientAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(organizationAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(eventAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(webhookEndpointRoutes, { ctx, prefix: ADMIN_PREFIX });
  await admin.register(importAdminRoutes, { ctx, prefix: ADMIN_PREFIX });
  // Behind the key like every admin route: it names every route the listener hides from strangers.
  admin.get(`${ADMIN_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => admin.swagger());
  return admin;
}
