import type { Writable } from 'node:stream';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from './admin-app.js';
import type { Config } from './config.js';
import { type AppContext, createContext } from './context.js';
import { accountRoutes } from './features/account/routes.js';
import { accountDeletionRoutes } from './features/account-deletion/routes.js';
import { accountUiRoutes } from './features/account-ui/routes.js';
import { installWebhookDelivery } from './features/events/webhooks/worker.js';
import { healthRoutes } from './features/health/routes.js';
import { connectedAppRoutes } from './features/oidc/account-routes.js';
import { CONSOLE_CLIENT_ID } from './features/oidc/console-client.js';
import { oidcRoutes } from './features/oidc/routes.js';
import { organizationRoutes } from './features/organizations/routes.js';
import { passkeyRoutes, passkeyStepUpRoutes } from './features/passkeys/routes.js';
import { passwordRoutes } from './features/passwords/routes.js';
import { providerFlowRoutes } from './features/providers/flows/routes.js';
import { providerRoutes } from './features/providers/routes.js';
import type { OutboundFetch } from './features/providers/upstream.js';
import { recoveryCodeRoutes } from './features/recovery-codes/routes.js';
import { registrationRoutes } from './features/registration/routes.js';
import { SCIM_PREFIX, scimRoutes } from './features/scim/routes.js';
import { scimGroupRoleRoutes, scimTokenRoutes } from './features/scim/token-routes.js';
import { secondFactorRoutes } from './features/second-factors/routes.js';
import { installSecurityNotices } from './features/security-notices/service.js';
import { installSignInNotices } from './features/security-notices/sign-ins.js';
import { jwksRoute, sessionRoutes } from './features/sessions/routes.js';
import {
  passkeySignInRoutes,
  providerHandoffRoutes,
  secondStepRoutes,
  signInRoutes,
} from './features/sign-in/routes.js';
import { signInMethodRoutes } from './features/sign-in-methods/routes.js';
import { ssoRoutes } from './features/sso/routes.js';
import { stepUpRoutes } from './features/step-up/routes.js';
import { installAuditHeadLog } from './platform/audit/anchor.js';
import { type Clock, systemClock } from './platform/clock.js';
import type { Database } from './platform/db/database.js';
import { createServer, installPlatformPolicies } from './platform/http/server.js';
import { createLogger } from './platform/log/logger.js';
import { PrometheusMetrics, serveMetrics } from './platform/metrics/prometheus.js';
import { silentSignals } from './platform/metrics/signals.js';
import { registerRateLimits } from './platform/rate-limit/rate-limit.js';
import { connectRedis } from './platform/rate-limit/redis.js';
import { installRateLimitSweep } from './platform/rate-limit/sweep.js';

export interface BuildOptions {
  config: Config;
  database: Database;
  clock?: Clock;
  /** Where JSON log lines go (tests capture them); stdout by default. */
  logStream?: Writable;
  /** Rate-limit key namespace (tests isolate themselves on a shared Redis). */
  rateLimitNamespace?: string;
  /** Tests only: the upstream providers' HTTP requests (docs/providers.md), sent to loopback fakes. */
  upstreamFetch?: OutboundFetch;
}

export const API_PREFIX = '/api/v1';

export interface BuiltApp {
  app: FastifyInstance;
  ctx: AppContext;
  /**
   * The operators' listener (/admin/v1), built when ADMIN_PORT is set; closed with `app`. The
   * caller listens on ADMIN_HOST:ADMIN_PORT.
   */
  admin?: FastifyInstance;
  /** Writes out buffered log lines synchronously (fatal errors, a shutdown out of time). */
  flushLogs(): void;
  /** Writes out every log line in order and resolves when written (a graceful shutdown's end). */
  drainLogs(): Promise<void>;
}

export async function buildApp(opts: BuildOptions): Promise<BuiltApp> {
  const { config, database } = opts;
  const { logger, access, flush, drain } = createLogger(config.logLevel, opts.logStream);
  const app = createServer(config, logger);
  // Metrics only with a listener to serve them on (METRICS_PORT): off, every signal is a no-op.
  const metrics = config.metrics.port > 0 ? new PrometheusMetrics() : undefined;
  const ctx: AppContext = await createContext(
    config,
    database,
    opts.clock ?? systemClock,
    app.log,
    metrics ?? silentSignals,
    opts.upstreamFetch,
  );
  app.addHook('onClose', async () => {
    // Notices under way are sent before the channels close.
    await ctx.notices.idle();
    await ctx.securityNotices.idle();
    await ctx.notifier.close();
  });
  if (metrics) {
    metrics.sample({
      argon2: () => ctx.passwords.stats(),
      pool: () => database.poolStats(),
      webhookQueue: () => ctx.webhooks.queue(),
    });
    metrics.observeRequests(app);
    const server = await serveMetrics(metrics, config.metrics.host, config.metrics.port);
    app.addHook('onClose', async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
  }
  // The audit head, logged now and then, anchors the chain outside the database.
  installAuditHeadLog(app, database.db, config.auditHeadLogSeconds);
  // Budgets and send windows that can no longer change an answer are deleted, so neither grows.
  installRateLimitSweep(app, database.db, ctx.clock, {
    guesses: config.rateLimits.guesses,
    sendWindowSeconds: config.rateLimits.sendsAMessage.windowSeconds,
  });

  // Platform policies (platform/http/server.ts), the same on the operators' listener.
  installPlatformPolicies(app, access);
  installSignInNotices(app, ctx.notices);
  installSecurityNotices(app, ctx.securityNotices);
  installWebhookDelivery(app, ctx.webhooks);

  // No allowed origin (the default): no CORS hook on any request. Without it a browser's cross-origin
  // read gets no allow-origin header, as with the plugin set to refuse every origin, and a preflight
  // is the same 404 Problem Details (docs/decisions.md, "A cheaper request").
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: config.corsOrigins,
      credentials: false,
      exposedHeaders: ['ETag', 'X-Request-Id'],
      // PATCH, PUT and DELETE: the organization routes (docs/organizations.md).
      methods: ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'If-None-Match', 'If-Match', 'x-elevation-token'],
    });
  }

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Identity Service',
        version: '2.0.0',
        description: 'Registration, sign-in, sessions, step-up, second factors and account recovery.',
      },
      servers: [{ url: config.publicOrigin }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          elevation: { type: 'apiKey', in: 'header', name: 'x-elevation-token' },
          scimToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'A SCIM token of one organization (docs/scim.md)',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) || `def-${i}` },
  });

  const redis = connectRedis(app, config.redisUrl);
  await registerRateLimits(app, redis, opts.rateLimitNamespace ?? 'identity-rl:', ctx.signals);

  // Platform first (above), then features: every feature relies on the error handling, the
  // validator, the limiter and the OpenAPI collector being in place when its routes register.
  await app.register(healthRoutes, { ctx });
  await app.register(jwksRoute, { ctx });
  // The OpenID Provider: discovery at the origin, its protocol under /oidc (docs/oidc.md).
  await app.register(oidcRoutes, { ctx });
  await app.register(
    async (api) => {
      // Business routes register here, each feature a plugin under /api/v1.
      await api.register(registrationRoutes, { ctx });
      // The sign-in routes (features/sign-in/) register where they stand in the OpenAPI document.
      await api.register(signInRoutes, { ctx });
      await api.register(sessionRoutes, { ctx });
      await api.register(stepUpRoutes, { ctx });
      await api.register(secondStepRoutes, { ctx });
      await api.register(secondFactorRoutes, { ctx });
      await api.register(recoveryCodeRoutes, { ctx });
      await api.register(signInMethodRoutes, { ctx });
      await api.register(passwordRoutes, { ctx });
      await api.register(providerRoutes, { ctx });
      await api.register(providerFlowRoutes, { ctx });
      await api.register(providerHandoffRoutes, { ctx });
      await api.register(accountRoutes, { ctx });
      await api.register(accountDeletionRoutes, { ctx });
      await api.register(organizationRoutes, { ctx });
      await api.register(scimTokenRoutes, { ctx });
      await api.register(scimGroupRoleRoutes, { ctx });
      await api.register(connectedAppRoutes, { ctx });
      await api.register(ssoRoutes, { ctx });
      // Passkeys only with a WebAuthn relying party (off in production without WEBAUTHN_*).
      if (ctx.config.webauthn) {
        await api.register(passkeyRoutes, { ctx });
        await api.register(passkeySignInRoutes, { ctx });
        await api.register(passkeyStepUpRoutes, { ctx });
      }
    },
    { prefix: API_PREFIX },
  );
  // SCIM 2.0 provisioning (docs/scim.md): its own errors and media type, outside /api/v1.
  await app.register(scimRoutes, { ctx, prefix: SCIM_PREFIX });
  // The hosted account UI (ACCOUNT_UI): a page outside the API, hidden from its OpenAPI document.
  await app.register(accountUiRoutes, { ctx, api: API_PREFIX });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // The operators' listener: its own instance, so no admin route is ever on the public port.
  // The console's calls to the OpenID Provider go through the public app's own routes, in process.
  const providerCall = (url: string, form: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        host: new URL(config.publicOrigin).host,
      },
      payload: new URLSearchParams(form).toString(),
    });
  const admin =
    config.admin.port > 0
      ? await buildAdminApp(ctx, logger, access, {
          async token(form) {
            const res = await providerCall('/oidc/token', form);
            const body =
              res.statusCode === 200 ? (res.json() as { access_token?: string; expires_in?: number }) : {};
            return { status: res.statusCode, accessToken: body.access_token, expiresIn: body.expires_in };
          },
          async revoke(token) {
            await providerCall('/oidc/token/revocation', { token, client_id: CONSOLE_CLIENT_ID });
          },
        })
      : undefined;
  if (admin) {
    app.addHook('preClose', async () => {
      await admin.close();
    });
  }
  return { app, ctx, admin, flushLogs: flush, drainLogs: drain };
}
