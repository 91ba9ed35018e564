import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requestFields } from '../log/logger.js';
import { Problem } from '../problem.js';
import { problemBody } from './problem.js';
import { validationEntries } from './validation.js';

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

/** True when the error means the database (or its network) is unreachable, not a bug. */
export function isUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
  const msg = typeof e.message === 'string' ? e.message : '';
  if (
    /timeout exceeded when trying to connect|Connection terminated|connection error|Client was closed|Cannot use a pool after calling end/i.test(
      msg,
    )
  ) {
    return true;
  }
  return e.cause !== undefined && e.cause !== err && isUnavailable(e.cause);
}

export const RETRY_AFTER_UNAVAILABLE = '5';

export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  if (problem.extra.headers) reply.headers(problem.extra.headers);
  return reply
    .code(problem.status)
    .type('application/problem+json')
    .send(JSON.stringify(problemBody(problem)));
}

/** Turns anything thrown into a Problem. Only the 500 branch logs the real error. */
export function toProblem(err: unknown, request: FastifyRequest): Problem {
  if (err instanceof Problem) return err;
  const e = err as FastifyError & { validation?: unknown[]; validationContext?: string };
  if (Array.isArray(e.validation)) {
    return new Problem('validation.failed', {
      errors: validationEntries(e.validation as ErrorObject[], e.validationContext),
    });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Problem('request.body_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new Problem('request.unsupported_media_type');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // A path parameter longer than the router accepts (414 from Fastify) is no valid id either.
      return new Problem('validation.failed', {
        errors: [{ location: 'path', field: '', code: 'maxLength', message: 'path parameter is too long' }],
      });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new Problem('validation.failed', {
        errors: [{ location: 'body', field: '', code: 'json', message: 'body is not a valid JSON object' }],
      });
  }
  if (isUnavailable(err)) {
    request.log.warn(requestFields(request, { errCode: e.code }), 'database unavailable');
    return new Problem('service.unavailable', { headers: { 'retry-after': RETRY_AFTER_UNAVAILABLE } });
  }
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (status === 400) {
    // Fastify's own 400s (bad JSON syntax, forbidden __proto__ keys, malformed URL).
    return new Problem('validation.failed', {
      errors: [{ location: 'body', field: '', code: 'malformed', message: 'request is malformed' }],
    });
  }
  if (status === 404) return new Problem('route.not_found');
  if (status === 413) return new Problem('request.body_too_large');
  if (status === 415) return new Problem('request.unsupported_media_type');
  request.log.error(requestFields(request, { err }), 'unexpected failure');
  return new Problem('internal.unexpected');
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => sendProblem(reply, toProblem(err, request)));
  app.setNotFoundHandler((_request, reply) => sendProblem(reply, new Problem('route.not_found')));
}
