import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Config } from './config.js';
import { type AppContext, createContext } from './context.js';
import { healthRoutes } from './features/health/routes.js';
import { passkeyRoutes } from './features/passkeys/routes.js';
import { passwordRoutes } from './features/passwords/routes.js';
import { providerRoutes } from './features/providers/routes.js';
import { ProviderService } from './features/providers/service.js';
import { recoveryCodeRoutes } from './features/recovery-codes/routes.js';
import { registrationRoutes } from './features/registration/routes.js';
import { secondFactorRoutes } from './features/second-factors/routes.js';
import { jwksRoute, sessionRoutes } from './features/sessions/routes.js';
import { signInMethodRoutes } from './features/sign-in-methods/routes.js';
import { stepUpRoutes } from './features/step-up/routes.js';
import { installAuditHeadLog } from './platform/audit/anchor.js';
import { type Clock, systemClock } from './platform/clock.js';
import type { Database } from './platform/db/database.js';
import { installJsonBodies } from './platform/http/content-type.js';
import { installErrorHandling, sendProblem, toProblem } from './platform/http/errors.js';
import { installRequestLifecycle } from './platform/http/lifecycle.js';
import { ProblemSchema } from './platform/http/schemas.js';
import { addSharedSchema, validatorCompiler } from './platform/http/validation.js';
import { createLogger, installAccessLog } from './platform/log/logger.js';
import { PrometheusMetrics, serveMetrics } from './platform/metrics/prometheus.js';
import { silentSignals } from './platform/metrics/signals.js';
import { registerRateLimits } from './platform/rate-limit/rate-limit.js';
import { connectRedis } from './platform/rate-limit/redis.js';

export interface BuildOptions {
  config: Config;
  database: Database;
  clock?: Clock;
  /** Where JSON log lines go (tests capture them); stdout by default. */
  logStream?: Writable;
  /** Rate-limit key namespace (tests isolate themselves on a shared Redis). */
  rateLimitNamespace?: string;
}

export const BODY_LIMIT = 16 * 1024;
export const API_PREFIX = '/api/v1';

export interface BuiltApp {
  app: FastifyInstance;
  ctx: AppContext;
  /** Writes out buffered log lines synchronously (shutdown, fatal errors). */
  flushLogs(): void;
}

export async function buildApp(opts: BuildOptions): Promise<BuiltApp> {
  const { config, database } = opts;
  const { logger, access, flush } = createLogger(config.logLevel, opts.logStream);
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One access line per request instead of Fastify's two (installAccessLog).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    // Fastify accepts a hop count here; its types only list the other forms.
    // A list of proxy addresses or ranges (proxy-addr); never a hop count, which Fastify 5 reads
    // as "trust nothing".
    trustProxy: config.trustProxy,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Draining is answered below as Problem Details: Fastify's own 503 is a bare JSON object
    // without Retry-After (interface 2.3, 7).
    return503OnClosing: false,
    // Every encapsulated plugin gets the strict compiler too: a plugin that adds a shared schema
    // would otherwise get Fastify's default Ajv, which strips unknown properties and coerces types.
    schemaController: {
      compilersFactory: {
        buildValidator: ((externalSchemas: Record<string, unknown> | undefined) => {
          for (const schema of Object.values(externalSchemas ?? {})) {
            if ((schema as { $id?: string }).$id) addSharedSchema(schema as { $id: string });
          }
          return validatorCompiler;
          // biome-ignore lint/suspicious/noExplicitAny: Fastify types the factory for its own Ajv
        }) as any,
      },
    },
    // Routing failures (a malformed URL) are answered as Problem Details too.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id);
      sendProblem(reply, toProblem(err, request));
    },
  });
  // Metrics only with a listener to serve them on (METRICS_PORT): off, every signal is a no-op.
  const metrics = config.metrics.port > 0 ? new PrometheusMetrics() : undefined;
  const ctx: AppContext = await createContext(
    config,
    database,
    opts.clock ?? systemClock,
    app.log,
    metrics ?? silentSignals,
  );
  app.addHook('onClose', async () => {
    await ctx.notifier.close();
  });
  if (metrics) {
    metrics.sample({ argon2: () => ctx.passwords.stats(), pool: () => database.poolStats() });
    metrics.observeRequests(app);
    const server = await serveMetrics(metrics, config.metrics.host, config.metrics.port);
    app.addHook('onClose', async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
  }
  // The audit head, logged now and then, anchors the chain outside the database.
  installAuditHeadLog(app, database.db, config.auditHeadLogSeconds);

  app.addSchema(ProblemSchema);
  addSharedSchema(ProblemSchema as { $id: string });
  // Platform policies in the order they act on a request: errors answered as Problem Details, the
  // request id and shutdown draining (onRequest), JSON-only bodies (preValidation).
  installErrorHandling(app);
  installRequestLifecycle(app);
  installAccessLog(app, access);
  installJsonBodies(app);

  await app.register(cors, {
    origin: config.corsOrigins.length > 0 ? config.corsOrigins : false,
    credentials: false,
    exposedHeaders: ['ETag', 'X-Request-Id'],
    methods: ['GET', 'HEAD', 'POST'],
    allowedHeaders: ['Authorization', 'Content-Type', 'If-None-Match', 'If-Match', 'x-elevation-token'],
  });

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
  await app.register(
    async (api) => {
      // Business routes register here, each feature a plugin under /api/v1.
      await api.register(registrationRoutes, { ctx });
      const providers = new ProviderService(ctx);
      await api.register(sessionRoutes, {
        ctx,
        signInWithProvider: (input, meta) => providers.signIn(input, meta),
      });
      await api.register(stepUpRoutes, { ctx });
      await api.register(secondFactorRoutes, { ctx });
      await api.register(recoveryCodeRoutes, { ctx });
      await api.register(signInMethodRoutes, { ctx });
      await api.register(passwordRoutes, { ctx });
      await api.register(providerRoutes, { ctx });
      // Passkeys only with a WebAuthn relying party (off in production without WEBAUTHN_*).
      if (ctx.config.webauthn) await api.register(passkeyRoutes, { ctx });
    },
    { prefix: API_PREFIX },
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return { app, ctx, flushLogs: flush };
}
