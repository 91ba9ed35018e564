import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Problem } from '../problem.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The JSON body may be omitted entirely (treated as `{}`). */
    optionalBody?: boolean;
    /**
     * The body is raw bytes of one of these media types (schemas.ts BinaryBody), read by a content
     * type parser the route's plugin registers: any other type is 415.
     */
    binaryBody?: readonly string[];
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
 * empty request as `{}`. The one exception is a route of raw bytes (`config.binaryBody`, the
 * picture upload), which takes its own media types only.
 */
export function installJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser(['text/plain']);
  // Only on routes that declare a body: a GET never pays for the check.
  app.addHook('onRoute', (route) => {
    if (!route.schema?.body) return;
    const existing = route.preValidation;
    const binary = route.config?.binaryBody;
    route.preValidation = [
      binary ? bytesOnly(binary) : jsonOnly,
      ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]),
    ];
  });
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** A body of raw bytes: only the route's media types. */
function bytesOnly(types: readonly string[]) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    if (!types.includes(mediaType(request.headers['content-type']))) {
      done(new Problem('request.unsupported_media_type'));
      return;
    }
    // No body at all reaches the handler as no bytes, which it refuses as it refuses any.
    if (!Buffer.isBuffer(request.body)) request.body = Buffer.alloc(0);
    done();
  };
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
