import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The pattern of the route that answers (`/api/v1/sessions/:id`), set as the request starts. */
    routePattern: string | undefined;
  }
}

/**
 * The route's pattern, known when the route registers, is put on each of its requests by a hook
 * of that route: Fastify's `request.routeOptions` builds a fresh options object on every read, and
 * the no-store decision, the access line and the metrics each need the pattern on every answer.
 */
export function installRoutePattern(app: FastifyInstance): void {
  app.decorateRequest('routePattern', undefined);
  app.addHook('onRoute', (route) => {
    const pattern = route.url;
    const mark: onRequestHookHandler = (request, _reply, done) => {
      request.routePattern = pattern;
      done();
    };
    const existing = route.onRequest;
    route.onRequest = [
      mark,
      ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]),
    ];
  });
}

/** The answering route's pattern; undefined when no route answered (a 404, a refused path). */
export function routePatternOf(request: FastifyRequest): string | undefined {
  return request.routePattern ?? request.routeOptions.url;
}
