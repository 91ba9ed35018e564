import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { operatorOf } from '../../../platform/http/admin-auth.js';
import { envelope, page } from '../../../platform/http/envelope.js';
import { routePatternOf } from '../../../platform/http/route-pattern.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, IdInput, NoContent, responses } from '../../../platform/http/schemas.js';
import { PageQuerySchema } from '../../../platform/pagination/page.js';
import { acceptLanguageTags, firstSpoken } from '../../../shared/locales.js';
import { InvitationBody, PendingInvitationPageSchema, SentInvitationSchema } from './routes.js';
import { InvitationService } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];

const Params = Type.Object({ id: IdInput }, { additionalProperties: false });
const InvitationIdParams = Type.Object(
  { id: IdInput, invitationId: IdInput },
  { additionalProperties: false },
);

function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: operatorOf(request) };
}

/**
 * The operators' invitation routes (docs/organizations.md, "Operators"), declared inside the
 * operators' organization plugin: the pending invitations of an organization, an operator's
 * invitation, and their revocation.
 */
export function invitationAdminRoutes(app: RouteApp, ctx: AppContext): void {
  const service = new InvitationService(ctx);

  app.get(
    '/organizations/:id/invitations',
    {
      schema: {
        tags: TAGS,
        summary:
          'An organization’s pending invitations (neither accepted, revoked nor expired), newest first (paged)',
        security: SECURITY,
        params: Params,
        querystring: PageQuerySchema,
        response: responses({ 200: PendingInvitationPageSchema }, [
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

  app.post(
    '/organizations/:id/invitations',
    {
      schema: {
        tags: TAGS,
        summary:
          'Invite an email address or phone number into the organization with any role (audited with the operator)',
        description:
          'What POST /api/v1/organizations/{organizationId}/invitations does, sent by the service: the ' +
          'invitee gets the same message and link, valid for ORGANIZATION_INVITATION_TTL_SECONDS, and a ' +
          'pending invitation to the same address is replaced. The invitation names no inviter (its ' +
          '`invitedBy` is null; the invitee is told "You are invited"); the operator is the event’s ' +
          'actor and the audit record’s. The message counts against RATE_LIMIT_SENDS_A_MESSAGE for the ' +
          'destination: past it, 429 and nothing is written or sent. A disabled organization answers 409 ' +
          'admin.organization_disabled.',
        security: SECURITY,
        params: Params,
        body: InvitationBody,
        response: responses(
          { 201: Data(SentInvitationSchema) },
          [
            'admin.unauthorized',
            'admin.organization_not_found',
            'admin.organization_disabled',
            'organization.role_unknown',
            'identity.identifier_unusable',
            'identity.identifier_channel_unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const sent = await service.operatorSend(
        operatorOf(request),
        request.params.id,
        request.body,
        firstSpoken(acceptLanguageTags(request.headers['accept-language'])),
      );
      return reply.code(201).send(envelope(sent));
    },
  );

  app.delete(
    '/organizations/:id/invitations/:invitationId',
    {
      schema: {
        tags: TAGS,
        summary: 'Revoke a pending invitation: its link no longer admits anyone (audited with the operator)',
        description:
          'An invitation already accepted or revoked, or of another organization, answers 404 ' +
          'organization.invitation_not_found.',
        security: SECURITY,
        params: InvitationIdParams,
        response: responses({ 204: NoContent }, [
          'admin.unauthorized',
          'admin.organization_not_found',
          'organization.invitation_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.operatorRevoke(operatorOf(request), request.params.id, request.params.invitationId);
      return reply.code(204).send();
    },
  );
}
