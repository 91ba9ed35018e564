import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { featureRoutes, type RouteApp } from '../../platform/http/routes.js';
import { NoContent } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { listOf, resourceTypes, schemas, serviceProviderConfig } from './discovery.js';
import { installScimErrors, notFound, SCIM_MEDIA_TYPE, unauthorized } from './errors.js';
import { ScimGroupService } from './groups.js';
import { type ListQuery as ListQueryInput, ScimUserService } from './service.js';
import { type ScimCaller, ScimTokenService } from './tokens.js';

export const SCIM_PREFIX = '/scim/v2';
const TAGS = ['scim'];
const SECURITY = [{ scimToken: [] }];
/** A group PATCH adding 1,000 members is about 60 KB: SCIM bodies may be far larger than the API's. */
const BODY_LIMIT = 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    scimCaller?: ScimCaller;
  }
}

const Id = Type.String({ minLength: 1, maxLength: 64, description: 'the resource id (a UUID)' });
const IdParams = Type.Object({ id: Id }, { additionalProperties: false });
const Projection = {
  attributes: Type.Optional(Type.String({ maxLength: 2048 })),
  excludedAttributes: Type.Optional(Type.String({ maxLength: 2048 })),
};
const GetQuery = Type.Object(Projection, { additionalProperties: false });
const ListQuery = Type.Object(
  {
    filter: Type.Optional(
      Type.String({ maxLength: 4096, description: 'RFC 7644 §3.4.2.2 (docs/scim.md, "Filters")' }),
    ),
    startIndex: Type.Optional(
      Type.Integer({ minimum: -2147483648, maximum: 2147483647, description: '1-based; below 1 reads as 1' }),
    ),
    count: Type.Optional(
      Type.Integer({
        minimum: -2147483648,
        maximum: 2147483647,
        description: 'at most 200; below 0 reads as 0',
      }),
    ),
    ...Projection,
  },
  { additionalProperties: false },
);
const AnyBody = Type.Object(
  {},
  { additionalProperties: true, description: 'a SCIM resource or PatchOp (RFC 7643, RFC 7644)' },
);

const scimResponse = (description: string) => ({
  description,
  content: { [SCIM_MEDIA_TYPE]: { schema: { type: 'object', additionalProperties: true } } },
});
const ERRORS = {
  400: scimResponse(
    'SCIM error: invalidValue, invalidSyntax, invalidFilter, invalidPath, noTarget, mutability',
  ),
  401: scimResponse('SCIM error: no valid SCIM token'),
  404: scimResponse('SCIM error: no such resource in the token’s organization'),
  409: scimResponse('SCIM error: uniqueness'),
  412: scimResponse('SCIM error: If-Match does not match the version'),
  413: scimResponse('SCIM error: body over 1 MiB'),
  415: scimResponse('SCIM error: body not JSON (application/scim+json or application/json)'),
  429: scimResponse('SCIM error: rate limit (RATE_LIMIT_OIDC_CLIENTS)'),
  500: scimResponse('SCIM error'),
  503: scimResponse('SCIM error: unavailable'),
};

function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

function send(reply: FastifyReply, status: number, body: unknown, etag?: string): FastifyReply {
  if (etag) reply.header('etag', etag);
  return reply.code(status).type(SCIM_MEDIA_TYPE).send(JSON.stringify(body));
}

function callerOf(request: FastifyRequest): ScimCaller {
  if (!request.scimCaller) throw unauthorized();
  return request.scimCaller;
}

/**
 * The SCIM 2.0 service provider at /scim/v2 (docs/scim.md), one for the deployment: the bearer
 * token decides the organization, and every read and write is of that organization alone. Errors
 * are SCIM's (errors.ts), never Problem Details; the bodies are read by resource.ts (RFC 7643's
 * leniency), not by strict schemas.
 */
export const scimRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const tokens = new ScimTokenService(ctx);
  const users = new ScimUserService(ctx);
  const groups = new ScimGroupService(ctx);
  const base = `${ctx.config.publicOrigin}${SCIM_PREFIX}`;
  const docs = `${ctx.config.publicOrigin}/openapi.json`;
  installScimErrors(app);
  app.addContentTypeParser(
    SCIM_MEDIA_TYPE,
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  );
  const limit = limitFor(ctx.config.rateLimits.oidcClients, 'scim');

  app.addHook('preHandler', async (request) => {
    const caller = await tokens.authenticate(bearerOf(request));
    if (!caller) throw unauthorized();
    request.scimCaller = caller;
  });

  const read = (summary: string, extra: Record<string, unknown> = {}) => ({
    config: limit,
    schema: {
      tags: TAGS,
      summary,
      security: SECURITY,
      ...extra,
      response: { 200: scimResponse('the resource or list'), ...ERRORS },
    },
  });
  const write = (summary: string, status: number, extra: Record<string, unknown> = {}) => ({
    config: limit,
    bodyLimit: BODY_LIMIT,
    schema: {
      tags: TAGS,
      summary,
      security: SECURITY,
      body: AnyBody,
      ...extra,
      response: { [status]: scimResponse('the resource as it is now, with its ETag'), ...ERRORS },
    },
  });

  declareDiscovery(app, read, base, docs);

  app.get(
    '/Users',
    read('List or filter the organization’s users (startIndex/count)', { querystring: ListQuery }),
    async (request, reply) =>
      send(reply, 200, await users.list(callerOf(request), request.query as ListQueryInput, base)),
  );
  app.get(
    '/Users/:id',
    read('One user (ETag: its version)', { params: IdParams, querystring: GetQuery }),
    async (request, reply) => {
      const { resource, etag } = await users.get(
        callerOf(request),
        idOf(request),
        base,
        request.query as ListQueryInput,
      );
      return send(reply, 200, resource, etag);
    },
  );
  app.post(
    '/Users',
    write('Provision a user: a new identity, or an existing one with that verified address (audited)', 201),
    async (request, reply) => {
      const { resource, etag } = await users.create(callerOf(request), request.body, base);
      reply.header('location', `${base}/Users/${resource.id}`);
      return send(reply, 201, resource, etag);
    },
  );
  app.put(
    '/Users/:id',
    write('Replace a user (If-Match honoured; audited)', 200, { params: IdParams }),
    async (request, reply) => {
      const { resource, etag } = await users.replace(
        callerOf(request),
        idOf(request),
        request.body,
        ifMatchOf(request),
        base,
      );
      return send(reply, 200, resource, etag);
    },
  );
  app.patch(
    '/Users/:id',
    write('Modify a user with PatchOp; active false suspends and ends every session (audited)', 200, {
      params: IdParams,
    }),
    async (request, reply) => {
      const { resource, etag } = await users.patch(
        callerOf(request),
        idOf(request),
        request.body,
        ifMatchOf(request),
        base,
      );
      return send(reply, 200, resource, etag);
    },
  );
  app.delete(
    '/Users/:id',
    {
      config: limit,
      schema: {
        tags: TAGS,
        summary: 'Deprovision a user: the membership ends; a managed identity is erased (audited)',
        security: SECURITY,
        params: IdParams,
        response: { 204: NoContent, ...ERRORS },
      },
    },
    async (request, reply) => {
      await users.remove(callerOf(request), idOf(request), ifMatchOf(request));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/Groups',
    read('List or filter the organization’s groups (startIndex/count)', { querystring: ListQuery }),
    async (request, reply) =>
      send(reply, 200, await groups.list(callerOf(request), request.query as ListQueryInput, base)),
  );
  app.get(
    '/Groups/:id',
    read('One group with its members (ETag: its version)', { params: IdParams, querystring: GetQuery }),
    async (request, reply) => {
      const { resource, etag } = await groups.get(
        callerOf(request),
        idOf(request),
        base,
        request.query as ListQueryInput,
      );
      return send(reply, 200, resource, etag);
    },
  );
  app.post('/Groups', write('Create a group, with its members (audited)', 201), async (request, reply) => {
    const { resource, etag } = await groups.create(callerOf(request), request.body, base);
    reply.header('location', `${base}/Groups/${resource.id}`);
    return send(reply, 201, resource, etag);
  });
  app.put(
    '/Groups/:id',
    write('Replace a group and its members (If-Match honoured; audited)', 200, { params: IdParams }),
    async (request, reply) => {
      const { resource, etag } = await groups.replace(
        callerOf(request),
        idOf(request),
        request.body,
        ifMatchOf(request),
        base,
      );
      return send(reply, 200, resource, etag);
    },
  );
  app.patch(
    '/Groups/:id',
    write('Rename a group, add or remove members (1,000 in one request; audited)', 200, { params: IdParams }),
    async (request, reply) => {
      const result = await groups.patch(
        callerOf(request),
        idOf(request),
        request.body,
        ifMatchOf(request),
        base,
      );
      return send(reply, 200, result.resource, result.etag);
    },
  );
  app.delete(
    '/Groups/:id',
    {
      config: limit,
      schema: {
        tags: TAGS,
        summary: 'Delete a group (audited)',
        security: SECURITY,
        params: IdParams,
        response: { 204: NoContent, ...ERRORS },
      },
    },
    async (request, reply) => {
      await groups.remove(callerOf(request), idOf(request), ifMatchOf(request));
      return reply.code(204).send(null);
    },
  );
});

/** The path's id, lower-cased (ids are UUIDs; any other text finds nothing). */
function idOf(request: FastifyRequest): string {
  const id = (request.params as { id: string }).id.toLowerCase();
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw notFound();
  return id;
}

function ifMatchOf(request: FastifyRequest): string | undefined {
  const h = request.headers['if-match'];
  return typeof h === 'string' ? h : undefined;
}

function declareDiscovery(
  app: RouteApp,
  read: (summary: string, extra?: Record<string, unknown>) => object,
  base: string,
  docs: string,
): void {
  app.get(
    '/ServiceProviderConfig',
    read('What this service provider supports (RFC 7644 §5)'),
    async (_r, reply) => send(reply, 200, serviceProviderConfig(base, docs)),
  );
  app.get('/ResourceTypes', read('User and Group'), async (_r, reply) =>
    send(reply, 200, listOf(resourceTypes(base))),
  );
  app.get('/ResourceTypes/:id', read('One resource type', { params: IdParams }), async (request, reply) => {
    const found = resourceTypes(base).find((t) => t.id === (request.params as { id: string }).id);
    if (!found) throw notFound();
    return send(reply, 200, found);
  });
  app.get('/Schemas', read('The User, EnterpriseUser and Group schemas'), async (_r, reply) =>
    send(reply, 200, listOf(schemas(base))),
  );
  app.get(
    '/Schemas/:id',
    read('One schema, by its URN', {
      params: Type.Object({ id: Type.String({ maxLength: 200 }) }, { additionalProperties: false }),
    }),
    async (request, reply) => {
      const found = schemas(base).find((s) => s.id === (request.params as { id: string }).id);
      if (!found) throw notFound();
      return send(reply, 200, found);
    },
  );
}
