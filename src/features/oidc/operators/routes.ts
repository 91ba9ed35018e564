import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { operatorOf } from '../../../platform/http/admin-auth.js';
import {
  conditionalGet,
  ifNoneMatchHits,
  type Precondition,
  preconditionOf as readIfMatch,
} from '../../../platform/http/conditional.js';
import { envelope, page } from '../../../platform/http/envelope.js';
import { routePatternOf } from '../../../platform/http/route-pattern.js';
import { featureRoutes } from '../../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../../platform/http/schemas.js';
import { Problem, type ProblemCode } from '../../../platform/problem.js';
import { OidcClients } from '../clients.js';
import { configuredClients } from '../console-client.js';
import * as schema from '../schemas.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];
const PATH = '/oidc-clients';
const ETAG_HEADER = {
  ETag: {
    schema: { type: 'string' },
    description: 'Strong validator of the registered client; If-Match takes it',
  },
};
const WRITE_REFUSALS: ProblemCode[] = [
  'admin.unauthorized',
  'admin.oidc_client_not_found',
  'admin.oidc_client_configured',
  'precondition.failed',
];

/** A cursor of the client list is bound to its route and to the key that asked for it. */
function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: operatorOf(request) };
}

/** If-Match as the service reads it: absent is `required` (428) or any version, as the route says. */
function preconditionOf(request: FastifyRequest, required: boolean): Precondition {
  if (required && request.headers['if-match'] === undefined) throw new Problem('precondition.required');
  return readIfMatch(request.headers);
}

function withEtag(reply: FastifyReply, etag: string | undefined): void {
  if (etag) reply.header('etag', etag);
}

/**
 * The operators' routes for the OpenID Provider's clients (docs/admin.md, "OpenID Provider
 * clients"), on the admin listener under /admin/v1 behind the operator key like every admin route.
 */
export const oidcClientAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const clients = new OidcClients({
    database: ctx.database,
    clock: ctx.clock,
    audit: ctx.audit,
    events: ctx.events,
    cursors: ctx.cursors,
    configured: configuredClients(ctx.config),
    production: ctx.config.nodeEnv === 'production',
  });
  app.addSchema(schema.ClientSchema);
  app.addSchema(schema.IssuedClientSchema);

  app.post(
    PATH,
    {
      schema: {
        tags: TAGS,
        summary:
          'Register a client (RFC 7591 names); a confidential one gets its secret, shown this once (audited)',
        security: SECURITY,
        body: schema.CreateClientBody,
        response: responses(
          { 201: { ...Data(schema.IssuedClientSchema), headers: ETAG_HEADER } },
          ['admin.unauthorized', 'admin.oidc_client_exists', 'admin.oidc_client_invalid'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const issued = await clients.create(request.body, operatorOf(request));
      withEtag(reply, issued.etag);
      reply.header('location', `${request.url.replace(/\/$/, '')}/${issued.client.client_id}`);
      return reply.code(201).send(envelope({ ...issued.client, client_secret: issued.secret }));
    },
  );

  app.get(
    PATH,
    {
      schema: {
        tags: TAGS,
        summary: 'Every client, configured and registered, by client id (paged); never a secret',
        security: SECURITY,
        querystring: schema.ClientListQuery,
        response: responses({ 200: schema.ClientPage }, [
          'admin.unauthorized',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await clients.page(adminScope(request), request.query);
      return page(items, pageInfo);
    },
  );

  app.get(
    `${PATH}/:clientId`,
    {
      schema: {
        tags: TAGS,
        summary: 'One client; a registered one with its strong ETag (If-None-Match: 304)',
        security: SECURITY,
        params: schema.ClientParams,
        response: responses({ 200: { ...Data(schema.ClientSchema), headers: ETAG_HEADER }, 304: NoContent }, [
          'admin.unauthorized',
          'admin.oidc_client_not_found',
        ]),
      },
    },
    async (request, reply) => {
      const { client, etag } = await clients.read(request.params.clientId);
      const body = envelope(client);
      if (etag) {
        reply.header('etag', etag);
        const raw = request.headers['if-none-match'];
        if (ifNoneMatchHits(Array.isArray(raw) ? raw.join(', ') : raw, etag)) return reply.code(304).send();
        return body;
      }
      // A configured client has no version to write against: a weak tag, for revalidation only.
      if (conditionalGet(request, reply, body)) return reply.code(304).send();
      return body;
    },
  );

  app.patch(
    `${PATH}/:clientId`,
    {
      schema: {
        tags: TAGS,
        summary: 'Change a registered client’s metadata; If-Match required (audited)',
        description:
          'Each field given replaces the stored one (null removes backchannel_logout_uri); the result is checked ' +
          'whole. 428 without If-Match, 412 when the client changed since that ETag.',
        security: SECURITY,
        params: schema.ClientParams,
        body: schema.UpdateClientBody,
        response: responses(
          { 200: { ...Data(schema.ClientSchema), headers: ETAG_HEADER } },
          [...WRITE_REFUSALS, 'precondition.required', 'admin.oidc_client_invalid'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const pre = preconditionOf(request, true);
      const { client, etag } = await clients.update(
        request.params.clientId,
        request.body,
        pre,
        operatorOf(request),
      );
      withEtag(reply, etag);
      return envelope(client);
    },
  );

  app.post(
    `${PATH}/:clientId/secret-rotations`,
    {
      schema: {
        tags: TAGS,
        summary:
          'A new secret for a confidential client, shown this once; the old one is refused at once (audited)',
        description: 'If-Match optional: when sent, 412 unless it names the current version.',
        security: SECURITY,
        params: schema.ClientParams,
        response: responses({ 201: { ...Data(schema.IssuedClientSchema), headers: ETAG_HEADER } }, [
          ...WRITE_REFUSALS,
          'admin.oidc_client_invalid',
        ]),
      },
    },
    async (request, reply) => {
      const issued = await clients.rotateSecret(
        request.params.clientId,
        preconditionOf(request, false),
        operatorOf(request),
      );
      withEtag(reply, issued.etag);
      return reply.code(201).send(envelope({ ...issued.client, client_secret: issued.secret }));
    },
  );

  app.delete(
    `${PATH}/:clientId`,
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a registered client: its grants end, its tokens and consents go (audited)',
        description: 'If-Match optional: when sent, 412 unless it names the current version.',
        security: SECURITY,
        params: schema.ClientParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await clients.delete(request.params.clientId, preconditionOf(request, false), operatorOf(request));
      return reply.code(204).send();
    },
  );
});
