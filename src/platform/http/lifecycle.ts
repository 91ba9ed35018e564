import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Problem } from '../problem.js';
import { RETRY_AFTER_UNAVAILABLE } from './errors.js';
import { routePatternOf } from './route-pattern.js';

/**
 * Every answer names its attempt with the server's own X-Request-Id (a client-supplied one is
 * never echoed), and a shutdown drains: once close() begins, a request still reaching the server
 * on a busy keep-alive connection is refused as a retryable 503, and every answer sent while
 * draining closes its connection. No /api answer may be stored by a cache.
 *
 * Made with the listener (createServer), because one kind of answer passes no hook: a path the
 * router refuses (Fastify's frameworkErrors), which `refusedPath` marks instead.
 */
declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route's successful answers are public and immutable (a profile picture under an address
     * that changes with it): its handler sets their cache-control; every other answer of it is
     * no-store like the rest of /api.
     */
    publicCache?: boolean;
  }
}

export class RequestLifecycle {
  #draining = false;
  /** The patterns of the routes marked `publicCache`. */
  readonly #publicCache = new Set<string>();

  /** The hooks that mark every routed answer, and the draining switch. */
  install(app: FastifyInstance): void {
    app.addHook('preClose', async () => {
      this.#draining = true;
    });
    app.addHook('onRoute', (route) => {
      if (route.config?.publicCache) this.#publicCache.add(route.url);
    });
    // Callback hooks, not async ones: they run on every answer, and a promise per hook per request
    // is measurable on the cheapest routes (docs/performance.md).
    app.addHook('onSend', (request, reply, payload, done) => {
      this.#markAnswer(request, reply);
      done(null, payload);
    });
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id);
      if (this.#draining) {
        done(new Problem('service.unavailable', { headers: { 'retry-after': RETRY_AFTER_UNAVAILABLE } }));
        return;
      }
      done();
    });
  }

  /**
   * What the hooks give every answer, for the answer to a path the router refuses (a malformed
   * percent-encoding): its request id, and what `onSend` marks (no route answered it, so no-store,
   * and while draining the connection's close). Still the client's own error while draining (400,
   * not the 503 of a routed request): another instance would refuse the same path.
   */
  refusedPath(request: FastifyRequest, reply: FastifyReply): void {
    reply.header('x-request-id', request.id);
    this.#markAnswer(request, reply);
  }

  /** What every answer is marked with as it goes out (onSend, and a refused path's answer). */
  #markAnswer(request: FastifyRequest, reply: FastifyReply): void {
    // Node keeps a keep-alive connection whose request was in flight at server.close() open after
    // the answer, idle until the keep-alive timeout, which would hold the shutdown past its
    // deadline (exit 1 instead of 0).
    if (this.#draining) reply.header('connection', 'close');
    // Grants, elevations, enrolment secrets and recovery codes must never sit in a shared or
    // browser cache: no /api answer is stored (a client still revalidates its own copy by ETag).
    // Nor an operator's answer, which holds unmasked identifiers. Decided on the route that
    // answered, never the raw URL: the router decodes `/%61pi/v1/...` to an /api route while the
    // raw URL does not start with /api/. An answer no route gave (404, a refused path) holds
    // nothing worth caching either.
    const pattern = routePatternOf(request);
    // The one exception: a 200 of a `publicCache` route (a picture), whose handler said how long.
    if (pattern !== undefined && reply.statusCode === 200 && this.#publicCache.has(pattern)) return;
    if (pattern === undefined || pattern.startsWith('/api/') || pattern.startsWith('/admin/')) {
      reply.header('cache-control', 'no-store');
    }
  }
}
