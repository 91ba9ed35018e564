import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { operatorOf } from '../../../platform/http/admin-auth.js';
import { ifNoneMatchHits } from '../../../platform/http/conditional.js';
import { envelope, page } from '../../../platform/http/envelope.js';
import { routePatternOf } from '../../../platform/http/route-pattern.js';
import { featureRoutes } from '../../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../../platform/http/schemas.js';
import { PageQuerySchema } from '../../../platform/pagination/page.js';
import type { ProblemCode } from '../../../platform/problem.js';
import { connectionAdminRoutes } from '../connections/admin-routes.js';
import { domainAdminRoutes } from '../domains/admin-routes.js';
import * as schema from './schemas.js';
import { AdminOrganizations } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];
const PATH = '/organizations';
const ETAG_HEADER = {
  ETag: {
    schema: { type: 'string' },
    description: 'Strong validator of the organization (If-None-Match: 304)',
  },
};
const PAGE_REFUSALS: ProblemCode[] = [
  'admin.unauthorized',
  'collection.cursor_tampered',
  'collection.cursor_invalid',
  'collection.cursor_expired',
];
const WRITE_REFUSALS: ProblemCode[] = ['admin.unauthorized', 'admin.organization_not_found'];

/** A cursor of an admin list is bound to its route and to the key that asked for it. */
function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: operatorOf(request) };
}

/**
 * The operators' organization routes (docs/organizations.md, "Operators"), on the admin listener
 * under /admin/v1 behind the operator key like every admin route.
 */
export const organizationAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new AdminOrganizations(ctx);

  app.get(
    PATH,
    {
      schema: {
        tags: TAGS,
        summary: 'Every organization, disabled ones included, newest first (paged)',
        security: SECURITY,
        querystring: PageQuerySchema,
        response: responses({ 200: schema.AdminOrganizationPage }, PAGE_REFUSALS),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.list(adminScope(request), request.query);
      return page(items, pageInfo);
    },
  );

  app.post(
    PATH,
    {
      schema: {
        tags: TAGS,
        summary: 'Create an organization owned by an identity, whatever ORGANIZATION_CREATION says (audited)',
        security: SECURITY,
        body: schema.CreateOrganizationBody,
        response: responses(
          { 201: { ...Data(schema.AdminOrganizationDetail), headers: ETAG_HEADER } },
          [
            'admin.unauthorized',
            'admin.identity_not_found',
            'admin.identity_erased',
            'organization.slug_taken',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { organization, etag } = await service.create(request.body, operatorOf(request));
      reply.header('etag', etag);
      reply.header('location', `${request.url.replace(/\/$/, '')}/${organization.id}`);
      return reply.code(201).send(envelope(organization));
    },
  );

  app.get(
    `${PATH}/:id`,
    {
      schema: {
        tags: TAGS,
        summary: 'One organization, disabled or not, with its member and owner counts (strong ETag)',
        security: SECURITY,
        params: schema.OrganizationIdParams,
        response: responses(
          { 200: { ...Data(schema.AdminOrganizationDetail), headers: ETAG_HEADER }, 304: NoContent },
          WRITE_REFUSALS,
        ),
      },
    },
    async (request, reply) => {
      const { organization, etag } = await service.read(request.params.id);
      reply.header('etag', etag);
      const raw = request.headers['if-none-match'];
      if (ifNoneMatchHits(Array.isArray(raw) ? raw.join(', ') : raw, etag)) return reply.code(304).send();
      return envelope(organization);
    },
  );

  app.delete(
    `${PATH}/:id`,
    {
      schema: {
        tags: TAGS,
        summary: 'Delete an organization with its memberships; sessions acting in it act in none (audited)',
        security: SECURITY,
        params: schema.OrganizationIdParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.delete(request.params.id, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    `${PATH}/:id/disablements`,
    {
      schema: {
        tags: TAGS,
        summary: 'Disable: no longer anyone’s active organization, nor switchable to (idempotent; audited)',
        security: SECURITY,
        params: schema.OrganizationIdParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.disable(request.params.id, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.delete(
    `${PATH}/:id/disablements`,
    {
      schema: {
        tags: TAGS,
        summary: 'Enable a disabled organization again (idempotent; audited)',
        security: SECURITY,
        params: schema.OrganizationIdParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.enable(request.params.id, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.get(
    `${PATH}/:id/members`,
    {
      schema: {
        tags: TAGS,
        summary:
          'The members, newest first, each with its first verified identifier unmasked (paged; audited read)',
        security: SECURITY,
        params: schema.OrganizationIdParams,
        querystring: PageQuerySchema,
        response: responses({ 200: schema.AdminMemberPage }, [
          ...PAGE_REFUSALS,
          'admin.organization_not_found',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.members(
        adminScope(request),
        request.query,
        request.params.id,
        operatorOf(request),
      );
      return page(items, pageInfo);
    },
  );

  app.put(
    `${PATH}/:id/members/:identityId`,
    {
      schema: {
        tags: TAGS,
        summary: 'Add an identity with a role (201), or change its role (200); audited',
        description:
          'Demoting the last owner answers 409 organization.last_owner; an unknown role 422 organization.role_unknown.',
        security: SECURITY,
        params: schema.OrganizationMemberParams,
        body: schema.MemberRoleBody,
        response: responses(
          { 200: Data(schema.AdminMemberRole), 201: Data(schema.AdminMemberRole) },
          [
            ...WRITE_REFUSALS,
            'admin.identity_not_found',
            'admin.identity_erased',
            'organization.role_unknown',
            'organization.last_owner',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { member, added } = await service.setMember(
        request.params.id,
        request.params.identityId,
        request.body.role,
        operatorOf(request),
      );
      return reply.code(added ? 201 : 200).send(envelope(member));
    },
  );

  app.delete(
    `${PATH}/:id/members/:identityId`,
    {
      schema: {
        tags: TAGS,
        summary: 'Remove a member; the last owner stays (409 organization.last_owner); audited',
        security: SECURITY,
        params: schema.OrganizationMemberParams,
        response: responses({ 204: NoContent }, [
          ...WRITE_REFUSALS,
          'organization.member_not_found',
          'organization.last_owner',
        ]),
      },
    },
    async (request, reply) => {
      await service.removeMember(request.params.id, request.params.identityId, operatorOf(request));
      return reply.code(204).send();
    },
  );

  domainAdminRoutes(app, ctx);
  connectionAdminRoutes(app, ctx);
});
