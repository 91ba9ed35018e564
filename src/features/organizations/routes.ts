import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf, SESSION_REFUSALS } from '../../platform/http/auth.js';
import { ifNoneMatchHits, preconditionOf } from '../../platform/http/conditional.js';
import { envelope } from '../../platform/http/envelope.js';
import { listRoute } from '../../platform/http/list-route.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import type { ProblemCode } from '../../platform/problem.js';
import { connectionRoutes } from './connections/routes.js';
import { domainRoutes } from './domains/routes.js';
import { invitationRoutes } from './invitations/routes.js';
import * as schema from './schemas.js';
import { OrganizationService } from './service.js';

const TAGS = ['organizations'];
const ETAG_HEADER = {
  ETag: { schema: { type: 'string' }, description: 'Strong validator; PATCH takes it in If-Match' },
};
const MEMBER_REFUSALS: ProblemCode[] = [...SESSION_REFUSALS, 'organization.not_found'];
const MANAGE_REFUSALS: ProblemCode[] = [
  ...MEMBER_REFUSALS,
  'organization.permission_denied',
  'organization.member_not_found',
  'organization.last_owner',
];

function sendVersioned(reply: FastifyReply, etag: string) {
  reply.header('etag', etag);
}

function activeOrganizationOf(request: FastifyRequest): string | null {
  return request.sessionRow?.activeOrganizationId ?? null;
}

/**
 * Organizations, memberships and roles (docs/organizations.md), behind the session guard. The
 * session's active organization is switched at POST /session/active-organization (sessions).
 */
export const organizationRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, elevated, security } = guards(ctx.auth);
  const service = new OrganizationService(ctx);
  app.addSchema(schema.OrganizationSchema);

  app.post(
    '/organizations',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Create an organization; the caller becomes its owner (audited)',
        description:
          'Needs a verified identifier. A slug already in use answers 409 organization.slug_taken; with ' +
          'ORGANIZATION_CREATION=operators every request answers 403 organization.creation_disabled.',
        security: security.session,
        body: schema.CreateBody,
        response: responses(
          { 201: { ...Data(schema.OrganizationSchema), headers: ETAG_HEADER } },
          [
            ...SESSION_REFUSALS,
            'organization.creation_disabled',
            'organization.identifier_required',
            'organization.slug_taken',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { organization, etag } = await service.create(principalOf(request).identityId, request.body);
      sendVersioned(reply, etag);
      return reply.code(201).send(envelope(organization));
    },
  );

  listRoute(app, '/organizations', {
    tags: TAGS,
    summary: "The caller's organizations, newest membership first, the active one marked (paged, weak ETag)",
    guard: session,
    security: security.session,
    page: schema.MembershipPageSchema,
    revalidates: true,
    list: (scope, query, request) => service.list(scope, query, activeOrganizationOf(request)),
  });

  app.get(
    '/organizations/:organizationId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'One organization the caller belongs to, with the caller’s role (strong ETag)',
        description:
          'An unknown organization and one the caller is not a member of answer the identical 404.',
        security: security.session,
        params: schema.OrganizationParams,
        response: responses(
          { 200: { ...Data(schema.OrganizationSchema), headers: ETAG_HEADER }, 304: NoContent },
          MEMBER_REFUSALS,
        ),
      },
    },
    async (request, reply) => {
      const { organization, etag } = await service.read(
        principalOf(request).identityId,
        request.params.organizationId,
      );
      sendVersioned(reply, etag);
      const raw = request.headers['if-none-match'];
      if (ifNoneMatchHits(Array.isArray(raw) ? raw.join(', ') : raw, etag)) return reply.code(304).send();
      return envelope(organization);
    },
  );

  app.patch(
    '/organizations/:organizationId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Rename an organization or set its second-factor policy (organization:update; audited)',
        description:
          'If-Match is optional; when sent it must name the current version (strong comparison), else 412.',
        security: security.session,
        params: schema.OrganizationParams,
        body: schema.UpdateBody,
        response: responses(
          { 200: { ...Data(schema.OrganizationSchema), headers: ETAG_HEADER } },
          [...MEMBER_REFUSALS, 'organization.permission_denied', 'precondition.failed'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { organization, etag } = await service.update(
        principalOf(request).identityId,
        request.params.organizationId,
        request.body,
        preconditionOf(request.headers),
      );
      sendVersioned(reply, etag);
      return envelope(organization);
    },
  );

  listRoute(app, '/organizations/:organizationId/members', {
    tags: TAGS,
    summary:
      'The members of an organization, newest first, each named by an identifier, masked unless the caller has members:manage (members:read)',
    guard: session,
    security: security.session,
    page: schema.MemberPageSchema,
    params: schema.OrganizationParams,
    refusals: ['organization.not_found', 'organization.permission_denied'],
    revalidates: true,
    list: (scope, query, request) =>
      service.members(
        scope,
        query,
        principalOf(request).identityId,
        (request.params as { organizationId: string }).organizationId,
      ),
  });

  app.put(
    '/organizations/:organizationId/members/:identityId/role',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Change a member’s role (members:manage; only an owner grants or takes owner; audited)',
        description:
          'The caller must hold every permission of the member’s current role and of the new one. Demoting ' +
          'the last owner answers 409 organization.last_owner; an unknown role 422 organization.role_unknown.',
        security: security.session,
        params: schema.MemberParams,
        body: schema.RoleBody,
        response: responses(
          { 200: Data(schema.MemberRoleSchema) },
          [...MANAGE_REFUSALS, 'organization.role_unknown'],
          { body: true },
        ),
      },
    },
    async (request) =>
      envelope(
        await service.setRole(
          principalOf(request).identityId,
          request.params.organizationId,
          request.params.identityId,
          request.body.role,
        ),
      ),
  );

  app.delete(
    '/organizations/:organizationId/members/:identityId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Leave (your own id) or remove a member (members:manage); audited',
        description:
          'Only an owner removes an owner; the last owner can neither leave nor be removed (409). The ' +
          'member’s sessions lose this organization as their active one at once.',
        security: security.session,
        params: schema.MemberParams,
        response: responses({ 204: NoContent }, MANAGE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.removeMember(
        principalOf(request).identityId,
        request.params.organizationId,
        request.params.identityId,
      );
      return reply.code(204).send();
    },
  );

  app.post(
    '/organizations/:organizationId/ownership-transfers',
    {
      preHandler: elevated,
      schema: {
        tags: TAGS,
        summary: 'Hand ownership to another member: they become owner, the caller admin (elevated; audited)',
        security: security.elevated,
        params: schema.OrganizationParams,
        body: schema.TransferBody,
        response: responses(
          { 201: Data(schema.MemberRoleSchema) },
          [
            ...ELEVATION_REFUSALS,
            'organization.not_found',
            'organization.permission_denied',
            'organization.member_not_found',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          envelope(
            await service.transfer(
              principalOf(request).identityId,
              request.params.organizationId,
              request.body.identityId,
            ),
          ),
        ),
  );

  invitationRoutes(app, ctx);
  domainRoutes(app, ctx);
  connectionRoutes(app, ctx);
});
