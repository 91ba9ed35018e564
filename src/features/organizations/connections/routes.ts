import type { AppContext } from '../../../context.js';
import { guards, principalOf } from '../../../platform/http/auth.js';
import { envelope } from '../../../platform/http/envelope.js';
import { listRoute } from '../../../platform/http/list-route.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../../platform/http/schemas.js';
import { OrganizationParams, PERMISSION_REFUSALS } from '../schemas.js';
import {
  ConnectionCreateBody,
  ConnectionPageSchema,
  ConnectionParams,
  ConnectionSchema,
  ConnectionUpdateBody,
} from './schemas.js';
import { ConnectionService } from './service.js';

const TAGS = ['organizations'];
const WRITE_REFUSALS = [
  ...PERMISSION_REFUSALS,
  'organization.connection_invalid',
  'organization.connection_metadata_unavailable',
] as const;

/**
 * Enterprise connections (docs/sso.md, "Connections"), declared inside the organizations plugin
 * (routes.ts). Every route needs `connections:manage` (owner and admin).
 */
export function connectionRoutes(app: RouteApp, ctx: AppContext): void {
  const { session, security } = guards(ctx.auth);
  const service = new ConnectionService(ctx);
  const member = (identityId: string) => ({ kind: 'member' as const, identityId });

  app.post(
    '/organizations/:organizationId/connections',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Add a SAML or OpenID connection (connections:manage; audited)',
        description:
          'SAML: `metadataXml` or `metadataUrl` (read once, now), or `idpEntityId`, `ssoUrl` and ' +
          '`signingCertificates`. OpenID: `issuer`, `clientId`, `clientSecret` (sealed, never shown). A ' +
          'connection is created disabled unless `enabled` is true. Incomplete, malformed, a DOCTYPE in ' +
          'the metadata, or a default role the caller may not grant: 422 organization.connection_invalid; ' +
          'a metadata URL that does not answer in time: 503 organization.connection_metadata_unavailable.',
        security: security.session,
        params: OrganizationParams,
        body: ConnectionCreateBody,
        response: responses({ 201: Data(ConnectionSchema) }, [...WRITE_REFUSALS], { body: true }),
      },
    },
    async (request, reply) => {
      const { type, ...input } = request.body;
      const view = await service.create(
        member(principalOf(request).identityId),
        request.params.organizationId,
        type,
        input,
      );
      return reply.code(201).send(envelope(view));
    },
  );

  listRoute(app, '/organizations/:organizationId/connections', {
    tags: TAGS,
    summary: 'The organization’s connections, newest first (connections:manage)',
    guard: session,
    security: security.session,
    page: ConnectionPageSchema,
    params: OrganizationParams,
    refusals: ['organization.not_found', 'organization.permission_denied'],
    revalidates: true,
    list: (scope, query, request) =>
      service.list(
        scope,
        query,
        member(principalOf(request).identityId),
        (request.params as { organizationId: string }).organizationId,
      ),
  });

  app.get(
    '/organizations/:organizationId/connections/:connectionId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'One connection, with our SP entity id, metadata URL and ACS URL (connections:manage)',
        security: security.session,
        params: ConnectionParams,
        response: responses({ 200: Data(ConnectionSchema) }, [
          ...PERMISSION_REFUSALS,
          'organization.connection_not_found',
        ]),
      },
    },
    async (request) =>
      envelope(
        await service.get(
          member(principalOf(request).identityId),
          request.params.organizationId,
          request.params.connectionId,
        ),
      ),
  );

  app.patch(
    '/organizations/:organizationId/connections/:connectionId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary:
          'Change a connection: enable, disable, rotate certificates, new metadata (connections:manage; audited)',
        description:
          'Only the fields sent change. New metadata replaces the entity id, SSO URL and certificates; ' +
          '`signingCertificates` replaces the set (send the current and the next during a rotation).',
        security: security.session,
        params: ConnectionParams,
        body: ConnectionUpdateBody,
        response: responses(
          { 200: Data(ConnectionSchema) },
          [...WRITE_REFUSALS, 'organization.connection_not_found'],
          { body: true },
        ),
      },
    },
    async (request) =>
      envelope(
        await service.update(
          member(principalOf(request).identityId),
          request.params.organizationId,
          request.params.connectionId,
          request.body,
        ),
      ),
  );

  app.delete(
    '/organizations/:organizationId/connections/:connectionId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Remove a connection (connections:manage; audited)',
        security: security.session,
        params: ConnectionParams,
        response: responses({ 204: NoContent }, [
          ...PERMISSION_REFUSALS,
          'organization.connection_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.remove(
        member(principalOf(request).identityId),
        request.params.organizationId,
        request.params.connectionId,
      );
      return reply.code(204).send();
    },
  );
}
