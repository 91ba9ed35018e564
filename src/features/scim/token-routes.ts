import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { operatorOf } from '../../platform/http/admin-auth.js';
import { guards, principalOf, SESSION_REFUSALS } from '../../platform/http/auth.js';
import { envelope, page } from '../../platform/http/envelope.js';
import { listRoute } from '../../platform/http/list-route.js';
import { routePatternOf } from '../../platform/http/route-pattern.js';
import { featureRoutes } from '../../platform/http/routes.js';
import {
  Data,
  IdInput,
  Instant,
  NoContent,
  responses,
  StoredText,
  Uuid,
} from '../../platform/http/schemas.js';
import { Page, PageQuerySchema } from '../../platform/pagination/page.js';
import type { ProblemCode } from '../../platform/problem.js';
import { ScimTokenService } from './tokens.js';

const PERMISSION_REFUSALS: ProblemCode[] = [
  ...SESSION_REFUSALS,
  'organization.not_found',
  'organization.permission_denied',
];

const TokenBody = Type.Object(
  { name: StoredText({ maxLength: 100, visible: true, description: 'e.g. "Okta" or "Entra ID"' }) },
  { additionalProperties: false },
);
const OrganizationParams = Type.Object({ organizationId: IdInput }, { additionalProperties: false });
const TokenParams = Type.Object(
  { organizationId: IdInput, tokenId: IdInput },
  { additionalProperties: false },
);
const AdminParams = Type.Object({ id: IdInput }, { additionalProperties: false });
const AdminTokenParams = Type.Object({ id: IdInput, tokenId: IdInput }, { additionalProperties: false });

const TokenSchema = Type.Object(
  {
    id: Uuid,
    organizationId: Uuid,
    name: Type.String(),
    createdBy: Type.String({ description: 'the owner’s identity id, or admin:<key name>' }),
    createdAt: Instant,
    revokedAt: Type.Union([Instant, Type.Null()]),
    lastUsedAt: Type.Union([Instant, Type.Null()], { description: 'the last SCIM request (to the minute)' }),
  },
  { additionalProperties: false },
);
const CreatedTokenSchema = Type.Object(
  {
    ...TokenSchema.properties,
    token: Type.String({ description: 'the bearer token for /scim/v2, shown once: only its hash is kept' }),
  },
  { additionalProperties: false },
);
const TokenPage = Page(TokenSchema);

/** An organization's SCIM tokens (docs/scim.md, "Tokens"), under /api/v1: `directory:manage` (owners). */
export const scimTokenRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, security } = guards(ctx.auth);
  const service = new ScimTokenService(ctx);
  const TAGS = ['organizations'];

  app.post(
    '/organizations/:organizationId/scim-tokens',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Create a SCIM token for the organization, shown once (directory:manage; audited)',
        security: security.session,
        params: OrganizationParams,
        body: TokenBody,
        response: responses({ 201: Data(CreatedTokenSchema) }, PERMISSION_REFUSALS, { body: true }),
      },
    },
    async (request, reply) => {
      const token = await service.create(
        { identityId: principalOf(request).identityId },
        request.params.organizationId,
        request.body.name.trim(),
      );
      return reply.code(201).header('cache-control', 'no-store').send(envelope(token));
    },
  );

  listRoute(app, '/organizations/:organizationId/scim-tokens', {
    tags: TAGS,
    summary: 'The organization’s SCIM tokens, revoked ones included, newest first (directory:manage)',
    guard: session,
    security: security.session,
    page: TokenPage,
    params: OrganizationParams,
    refusals: ['organization.not_found', 'organization.permission_denied'],
    revalidates: false,
    list: (scope, query, request) =>
      service.list(
        scope,
        query,
        principalOf(request).identityId,
        (request.params as { organizationId: string }).organizationId,
      ),
  });

  app.delete(
    '/organizations/:organizationId/scim-tokens/:tokenId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Revoke a SCIM token: refused from its next request (directory:manage; audited)',
        security: security.session,
        params: TokenParams,
        response: responses({ 204: NoContent }, [
          ...PERMISSION_REFUSALS,
          'organization.scim_token_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.revoke(
        { identityId: principalOf(request).identityId },
        request.params.organizationId,
        request.params.tokenId,
      );
      return reply.code(204).send();
    },
  );
});

const GroupRole = Type.Object(
  {
    groupKey: Type.String({ description: 'a SCIM group’s displayName or externalId (case-insensitive)' }),
    role: Type.String(),
  },
  { additionalProperties: false },
);
const GroupRoleBody = Type.Object(
  {
    groupKey: StoredText({ maxLength: 320, visible: true, description: 'a group displayName or externalId' }),
    role: Type.Union([Type.String({ pattern: '^[a-z][a-z0-9_-]{1,31}$' }), Type.Null()], {
      description: 'a role of the deployment other than owner; null removes the mapping',
    }),
  },
  { additionalProperties: false },
);

/** The organization's group → role mapping for SCIM groups (docs/scim.md, "Groups and roles"). */
export const scimGroupRoleRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, security } = guards(ctx.auth);
  const service = new ScimTokenService(ctx);
  const TAGS = ['organizations'];
  app.get(
    '/organizations/:organizationId/scim-group-roles',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'The roles SCIM groups give their members (directory:manage)',
        security: security.session,
        params: OrganizationParams,
        response: responses({ 200: Data(Type.Array(GroupRole)) }, PERMISSION_REFUSALS),
      },
    },
    async (request) =>
      envelope(await service.groupRoles(principalOf(request).identityId, request.params.organizationId)),
  );
  app.put(
    '/organizations/:organizationId/scim-group-roles',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary:
          'Map a SCIM group to a role, or remove the mapping with role null (directory:manage; audited)',
        security: security.session,
        params: OrganizationParams,
        body: GroupRoleBody,
        response: responses(
          { 200: Data(Type.Array(GroupRole)) },
          [...PERMISSION_REFUSALS, 'organization.role_unknown'],
          { body: true },
        ),
      },
    },
    async (request) =>
      envelope(
        await service.setGroupRole(
          principalOf(request).identityId,
          request.params.organizationId,
          request.body.groupKey.trim(),
          request.body.role,
        ),
      ),
  );
});

function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: `admin:${request.operator ?? ''}` };
}

/** The operators' SCIM token routes (/admin/v1/organizations/{id}/scim-tokens). */
export const scimTokenAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new ScimTokenService(ctx);
  const TAGS = ['admin'];
  const SECURITY = [{ adminKey: [] }];

  app.post(
    '/organizations/:id/scim-tokens',
    {
      schema: {
        tags: TAGS,
        summary: 'Create a SCIM token for an organization, shown once (audited with the operator)',
        security: SECURITY,
        params: AdminParams,
        body: TokenBody,
        response: responses(
          { 201: Data(CreatedTokenSchema) },
          ['admin.unauthorized', 'admin.organization_not_found'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const token = await service.create(
        { operator: operatorOf(request) },
        request.params.id,
        request.body.name.trim(),
      );
      return reply.code(201).header('cache-control', 'no-store').send(envelope(token));
    },
  );

  app.get(
    '/organizations/:id/scim-tokens',
    {
      schema: {
        tags: TAGS,
        summary: 'An organization’s SCIM tokens, newest first (paged)',
        security: SECURITY,
        params: AdminParams,
        querystring: PageQuerySchema,
        response: responses({ 200: TokenPage }, [
          'admin.unauthorized',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
          'admin.organization_not_found',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.operatorList(
        adminScope(request),
        request.query,
        request.params.id,
      );
      return page(items, pageInfo);
    },
  );

  app.delete(
    '/organizations/:id/scim-tokens/:tokenId',
    {
      schema: {
        tags: TAGS,
        summary: 'Revoke a SCIM token (audited with the operator)',
        security: SECURITY,
        params: AdminTokenParams,
        response: responses({ 204: NoContent }, [
          'admin.unauthorized',
          'admin.organization_not_found',
          'organization.scim_token_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.revoke({ operator: operatorOf(request) }, request.params.id, request.params.tokenId);
      return reply.code(204).send();
    },
  );
});
