import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { operatorOf } from '../../../platform/http/admin-auth.js';
import { envelope, page } from '../../../platform/http/envelope.js';
import { routePatternOf } from '../../../platform/http/route-pattern.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, IdInput, NoContent, responses } from '../../../platform/http/schemas.js';
import { PageQuerySchema } from '../../../platform/pagination/page.js';
import {
  ConnectionCreateBody,
  ConnectionPageSchema,
  ConnectionSchema,
  ConnectionUpdateBody,
} from './schemas.js';
import { ConnectionService } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];

const Params = Type.Object({ id: IdInput }, { additionalProperties: false });
const ConnectionIdParams = Type.Object(
  { id: IdInput, connectionId: IdInput },
  { additionalProperties: false },
);

function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: `admin:${request.operator ?? ''}` };
}

/** The operators' connection routes, declared inside the operators' organization plugin. */
export function connectionAdminRoutes(app: RouteApp, ctx: AppContext): void {
  const service = new ConnectionService(ctx);
  const operator = (request: FastifyRequest) => ({
    kind: 'operator' as const,
    operator: operatorOf(request),
  });

  app.get(
    '/organizations/:id/connections',
    {
      schema: {
        tags: TAGS,
        summary: 'An organization’s enterprise connections, newest first (paged)',
        security: SECURITY,
        params: Params,
        querystring: PageQuerySchema,
        response: responses({ 200: ConnectionPageSchema }, [
          'admin.unauthorized',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
          'admin.organization_not_found',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.list(
        adminScope(request),
        request.query,
        operator(request),
        request.params.id,
      );
      return page(items, pageInfo);
    },
  );

  app.post(
    '/organizations/:id/connections',
    {
      schema: {
        tags: TAGS,
        summary: 'Add a connection to an organization (audited with the operator)',
        description: 'As the organization route; any role but owner may be the default role.',
        security: SECURITY,
        params: Params,
        body: ConnectionCreateBody,
        response: responses(
          { 201: Data(ConnectionSchema) },
          [
            'admin.unauthorized',
            'admin.organization_not_found',
            'organization.connection_invalid',
            'organization.connection_metadata_unavailable',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { type, ...input } = request.body;
      const view = await service.create(operator(request), request.params.id, type, input);
      return reply.code(201).send(envelope(view));
    },
  );

  app.patch(
    '/organizations/:id/connections/:connectionId',
    {
      schema: {
        tags: TAGS,
        summary:
          'Change a connection (audited with the operator): enable IdP-initiated sign-in, rotate certificates…',
        security: SECURITY,
        params: ConnectionIdParams,
        body: ConnectionUpdateBody,
        response: responses(
          { 200: Data(ConnectionSchema) },
          [
            'admin.unauthorized',
            'admin.organization_not_found',
            'organization.connection_not_found',
            'organization.connection_invalid',
            'organization.connection_metadata_unavailable',
          ],
          { body: true },
        ),
      },
    },
    async (request) =>
      envelope(
        await service.update(operator(request), request.params.id, request.params.connectionId, request.body),
      ),
  );

  app.delete(
    '/organizations/:id/connections/:connectionId',
    {
      schema: {
        tags: TAGS,
        summary: 'Remove a connection (audited with the operator)',
        security: SECURITY,
        params: ConnectionIdParams,
        response: responses({ 204: NoContent }, [
          'admin.unauthorized',
          'admin.organization_not_found',
          'organization.connection_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.remove(operator(request), request.params.id, request.params.connectionId);
      return reply.code(204).send();
    },
  );
}
