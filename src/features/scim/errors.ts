import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toProblem } from '../../platform/http/errors.js';
import { CATALOGUE, Problem } from '../../platform/problem.js';

/** The SCIM error schema (RFC 7644 §3.12). */
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SCIM_MEDIA_TYPE = 'application/scim+json';

/** The scimType values this service answers (RFC 7644 §3.12, table 9). */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers';

/**
 * A refusal of the SCIM routes: answered in the SCIM error schema, never as Problem Details (a
 * directory reads `status`, `scimType` and `detail`). The detail never echoes request data.
 */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimType | undefined,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ScimError';
  }
}

export const invalidValue = (detail: string) => new ScimError(400, 'invalidValue', detail);
export const invalidSyntax = (detail: string) => new ScimError(400, 'invalidSyntax', detail);
export const invalidFilter = (detail: string) => new ScimError(400, 'invalidFilter', detail);
export const invalidPath = (detail: string) => new ScimError(400, 'invalidPath', detail);
export const noTarget = (detail: string) => new ScimError(400, 'noTarget', detail);
export const mutability = (detail: string) => new ScimError(400, 'mutability', detail);
export const uniqueness = (detail: string) => new ScimError(409, 'uniqueness', detail);
export const notFound = (what: 'User' | 'Group' | 'Resource' = 'Resource') =>
  new ScimError(404, undefined, `${what} not found.`);
export const preconditionFailed = () =>
  new ScimError(412, undefined, 'The resource changed: its version does not match If-Match.');
export const unauthorized = () =>
  new ScimError(401, undefined, 'A valid SCIM bearer token is required.', {
    'www-authenticate': 'Bearer realm="scim"',
  });

export function sendScimError(reply: FastifyReply, e: ScimError): FastifyReply {
  reply.headers(e.headers);
  return reply
    .code(e.status)
    .type(SCIM_MEDIA_TYPE)
    .send(
      JSON.stringify({
        schemas: [ERROR_SCHEMA],
        status: String(e.status),
        ...(e.scimType ? { scimType: e.scimType } : {}),
        detail: e.detail,
      }),
    );
}

/** Anything thrown on a SCIM route, as a SCIM error: the house's Problems keep their status and title. */
export function toScimError(err: unknown, request: FastifyRequest): ScimError {
  if (err instanceof ScimError) return err;
  const problem = err instanceof Problem ? err : toProblem(err, request);
  const headers = problem.extra.headers ?? {};
  const { detail } = CATALOGUE[problem.code];
  if (problem.code === 'validation.failed') {
    const json = (err as { code?: string }).code?.startsWith('FST_ERR_CTP') ?? false;
    return new ScimError(400, json ? 'invalidSyntax' : 'invalidValue', detail, headers);
  }
  return new ScimError(problem.status, undefined, detail, headers);
}

/** The SCIM plugin's error and not-found answers (encapsulated: the rest of the service is untouched). */
export function installScimErrors(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => sendScimError(reply, toScimError(err, request)));
  app.setNotFoundHandler((_request, reply) => sendScimError(reply, notFound()));
}
