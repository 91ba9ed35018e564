import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Problem } from '../problem.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The JSON body may be omitted entirely (treated as `{}`). */
    optionalBody?: boolean;
  }
}

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * Only JSON bodies exist here: a route with a body refuses any other media type (and a body
 * without a Content-Type) with 415 before validation; a route whose body is optional accepts an
 * empty request as `{}`.
 */
export function installJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser(['text/plain']);
  // Only on routes that declare a body: a GET never pays for the check.
  app.addHook('onRoute', (route) => {
    if (!route.schema?.body) return;
    const existing = route.preValidation;
    route.preValidation = [
      jsonOnly,
      ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]),
    ];
  });
}

function jsonOnly(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const hasBody =
    request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0';
  if (!isJson(request.headers['content-type'])) {
    if (!hasBody && !request.headers['transfer-encoding'] && request.routeOptions.config?.optionalBody) {
      request.body = {};
      done();
      return;
    }
    done(new Problem('request.unsupported_media_type'));
    return;
  }
  done();
}
