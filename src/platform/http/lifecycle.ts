import type { FastifyInstance } from 'fastify';
import { Problem } from '../problem.js';
import { RETRY_AFTER_UNAVAILABLE } from './errors.js';
import { routePatternOf } from './route-pattern.js';

/**
 * Every answer names its attempt with the server's own X-Request-Id (a client-supplied one is
 * never echoed), and a shutdown drains: once close() begins, a request still reaching the server
 * on a busy keep-alive connection is refused as a retryable 503, and every answer sent while
 * draining closes its connection. No /api answer may be stored by a cache.
 */
export function installRequestLifecycle(app: FastifyInstance): void {
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
  });
  // Node keeps a keep-alive connection whose request was in flight at server.close() open after
  // the answer, idle until the keep-alive timeout, which would hold the shutdown past its deadline
  // (exit 1 instead of 0).
  // Callback hooks, not async ones: they run on every answer, and a promise per hook per request
  // is measurable on the cheapest routes (docs/performance.md).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    // Grants, elevations, enrolment secrets and recovery codes must never sit in a shared or
    // browser cache: no /api answer is stored (a client still revalidates its own copy by ETag).
    // Nor an operator's answer, which holds unmasked identifiers. Decided on the route that
    // answered, never the raw URL: the router decodes `/%61pi/v1/...` to an /api route while the raw
    // URL does not start with /api/. An answer no route gave (404, a refused path) holds nothing
    // worth caching either.
    const pattern = routePatternOf(request);
    if (pattern === undefined || pattern.startsWith('/api/') || pattern.startsWith('/admin/')) {
      reply.header('cache-control', 'no-store');
    }
    done(null, payload);
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (draining) {
      done(new Problem('service.unavailable', { headers: { 'retry-after': RETRY_AFTER_UNAVAILABLE } }));
      return;
    }
    done();
  });
}
