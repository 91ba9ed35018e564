import Fastify, { type FastifyInstance, type FastifyRequest, LogController } from 'fastify';
import type { Logger } from 'pino';
import { type AccessLog, fastifyLogger, installAccessLog } from '../log/logger.js';
import type { Problem } from '../problem.js';
import { installJsonBodies } from './content-type.js';
import { installErrorHandling, sendProblem, toProblem } from './errors.js';
import { RequestLifecycle } from './lifecycle.js';
import { requestId } from './request-id.js';
import { installRoutePattern } from './route-pattern.js';
import { ProblemSchema } from './schemas.js';
import { addSharedSchema, validatorCompiler } from './validation.js';

const BODY_LIMIT = 16 * 1024;

/** What the server reads of the configuration. */
export interface ServerOptions {
  /** Proxies whose X-Forwarded-For is honoured (addresses or CIDR ranges); false: none. */
  trustProxy: string[] | false;
}

/**
 * A Fastify instance with the house's server options: the public listener and the operators'
 * listener (admin) are both made here, so both validate, log and refuse alike.
 */
export function createServer(
  config: ServerOptions,
  logger: Logger,
  opts: { guard?: (request: FastifyRequest) => Problem | undefined } = {},
): FastifyInstance {
  const lifecycle = new RequestLifecycle();
  const app = Fastify({
    // No child logger per request: almost no request logs beyond its access line (fastifyLogger).
    loggerInstance: fastifyLogger(logger),
    // One access line per request instead of Fastify's two (installAccessLog).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestId,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    // A list of proxy addresses or ranges (proxy-addr); never a hop count, which Fastify 5 reads
    // as "trust nothing".
    trustProxy: config.trustProxy,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Draining is answered below as Problem Details: Fastify's own 503 is a bare JSON object
    // without Retry-After (every error is Problem Details, and a 503 says when to retry:
    // docs/operations.md, "Health and readiness").
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
      // No hook runs for these, the request lifecycle's included: it marks them itself. A
      // listener's guard (the admin key) speaks first, because which paths the router refuses
      // depends on which routes exist.
      lifecycle.refusedPath(request, reply);
      sendProblem(reply, opts.guard?.(request) ?? toProblem(err, request));
    },
  });
  // First of the platform's hooks (installPlatformPolicies adds the rest): the request id and
  // draining act before anything else a request meets.
  lifecycle.install(app);
  return app;
}

/**
 * The platform policies in the order they act on a request, after the request id and shutdown
 * draining (onRequest, installed by createServer): errors answered as Problem Details, the access
 * line, JSON-only bodies (preValidation). Installed on every listener before any route registers.
 */
export function installPlatformPolicies(app: FastifyInstance, access: AccessLog): void {
  app.addSchema(ProblemSchema);
  addSharedSchema(ProblemSchema as { $id: string });
  installErrorHandling(app);
  installRoutePattern(app);
  installAccessLog(app, access);
  installJsonBodies(app);
}
