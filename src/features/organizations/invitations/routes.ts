import { type Static, Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { guards, principalOf, SESSION_REFUSALS } from '../../../platform/http/auth.js';
import { envelope } from '../../../platform/http/envelope.js';
import { listRoute } from '../../../platform/http/list-route.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, IdInput, Instant, NoContent, responses, Uuid } from '../../../platform/http/schemas.js';
import { Page } from '../../../platform/pagination/page.js';
import type { ProblemCode } from '../../../platform/problem.js';
import { limitFor, senderOf, sendingRouteLimit } from '../../../platform/rate-limit/rate-limit.js';
import { acceptLanguageTags, firstSpoken } from '../../../shared/locales.js';
import { IdentifierForm } from '../../identities/schemas.js';
import { OrganizationParams, PERMISSION_REFUSALS, RoleName } from '../schemas.js';
import { InvitationService } from './service.js';

const TAGS = ['organizations'];

const IdentifierType = Type.Union([Type.Literal('email'), Type.Literal('phone')]);
const Masked = Type.String({ description: 'masked: a***@example.com or +33******78' });
/** A token as sent: 256 bits in base64url (43 characters); anything else is a 400 before any lookup. */
const Token = Type.String({
  pattern: '^[A-Za-z0-9_-]{43}$',
  description: 'the token the invitation carried',
});

/** POST /organizations/{organizationId}/invitations: an identifier form and the role. Strict. */
export const InvitationBody = IdentifierForm({ role: RoleName });
export type InvitationBody = Static<typeof InvitationBody>;

export const TokenBody = Type.Object({ token: Token }, { additionalProperties: false });

export const InvitationParams = Type.Object(
  { organizationId: IdInput, invitationId: IdInput },
  { additionalProperties: false },
);

export const SentInvitationSchema = Type.Object(
  {
    id: Uuid,
    identifierType: IdentifierType,
    identifier: Masked,
    role: Type.String(),
    expiresAt: Instant,
    delivery: Type.Object({
      status: Type.Union([Type.Literal('DELIVERED'), Type.Literal('NOT_DELIVERED')]),
      resendable: Type.Boolean({
        description: 'true only when the failure proves the message never left; then invite again',
      }),
    }),
  },
  { additionalProperties: false },
);

export const PendingInvitationSchema = Type.Object({
  id: Uuid,
  identifierType: IdentifierType,
  identifier: Type.String({
    description: 'the invited address or number, normalised, not masked (only members:invite lists them)',
  }),
  role: Type.String(),
  invitedBy: Type.Union([Uuid, Type.Null()], {
    description:
      'the member who invited; null when an operator invited (POST /admin/v1/organizations/{id}/invitations)',
  }),
  createdAt: Instant,
  expiresAt: Instant,
});
export const PendingInvitationPageSchema = Page(PendingInvitationSchema);

export const InvitationLookupSchema = Type.Object({
  organization: Type.Object({ name: Type.String(), slug: Type.String() }),
  role: Type.String(),
  roleDisplayName: Type.Record(Type.String(), Type.String(), {
    description: "a configured role's display name by language (ORGANIZATION_ROLES); empty otherwise",
  }),
  identifierType: IdentifierType,
  identifier: Type.String({
    description: 'the invited address or number, whole: the token was sent there, so its holder is shown it',
  }),
  invitedBy: Type.Union(
    [
      Type.Object({
        name: Type.Union([Type.String(), Type.Null()], {
          description: "the inviter's name, if they set one",
        }),
        identifier: Type.Union([Type.String(), Type.Null()], {
          description: "the inviter's first verified address or number",
        }),
      }),
      Type.Null(),
    ],
    { description: 'who sent the invitation; null once they have neither a name nor an address (erased)' },
  ),
  expiresAt: Instant,
});

export const InvitationAcceptanceSchema = Type.Object({
  organization: Type.Object({ id: Uuid, name: Type.String(), slug: Type.String(), role: Type.String() }),
});

const TOKEN_REFUSALS: ProblemCode[] = [
  'organization.invitation_not_found',
  'organization.invitation_expired',
  'organization.invitation_revoked',
  'organization.invitation_accepted',
];

/**
 * Organization invitations (docs/organizations.md, "Invitations"), declared inside the
 * organizations plugin (routes.ts).
 */
export function invitationRoutes(app: RouteApp, ctx: AppContext): void {
  const { session, security } = guards(ctx.auth);
  const service = new InvitationService(ctx);

  app.post(
    '/organizations/:organizationId/invitations',
    {
      // Every request counts against the route's wider limiter; a send counts against
      // RATE_LIMIT_SENDS_A_MESSAGE for the client address and the destination, in the transaction.
      config: sendingRouteLimit(ctx.config.rateLimits, 'organization-invitations'),
      preHandler: session,
      schema: {
        tags: TAGS,
        summary:
          'Invite an email address or phone number into the organization with a role (members:invite; audited)',
        description:
          'Only an owner invites an owner, and nobody invites into a role with a permission they lack. The ' +
          'invitee gets a message with the hosted acceptance link (the token in its fragment), valid for ' +
          'ORGANIZATION_INVITATION_TTL_SECONDS. The answer is the same whether or not the address has an ' +
          'account or is already a member’s; a pending invitation to the same address is replaced. Each send ' +
          'counts against RATE_LIMIT_SENDS_A_MESSAGE per client address and per destination: past it, 429 and ' +
          'nothing is written or sent.',
        security: security.session,
        params: OrganizationParams,
        body: InvitationBody,
        response: responses(
          { 201: Data(SentInvitationSchema) },
          [
            ...PERMISSION_REFUSALS,
            'organization.role_unknown',
            'identity.identifier_unusable',
            'identity.identifier_channel_unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const sent = await service.send(
        principalOf(request).identityId,
        request.params.organizationId,
        request.body,
        senderOf(request),
        firstSpoken(acceptLanguageTags(request.headers['accept-language'])),
      );
      return reply.code(201).send(envelope(sent));
    },
  );

  listRoute(app, '/organizations/:organizationId/invitations', {
    tags: TAGS,
    summary: 'The organization’s pending invitations, newest first, each address as invited (members:invite)',
    guard: session,
    security: security.session,
    page: PendingInvitationPageSchema,
    params: OrganizationParams,
    refusals: ['organization.not_found', 'organization.permission_denied'],
    revalidates: true,
    list: (scope, query, request) =>
      service.list(
        scope,
        query,
        principalOf(request).identityId,
        (request.params as { organizationId: string }).organizationId,
      ),
  });

  app.delete(
    '/organizations/:organizationId/invitations/:invitationId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Withdraw a pending invitation (members:invite; audited)',
        description:
          'An unknown id, or an invitation no longer pending, answers 404 organization.invitation_not_found.',
        security: security.session,
        params: InvitationParams,
        response: responses({ 204: NoContent }, [
          ...PERMISSION_REFUSALS,
          'organization.invitation_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.revoke(
        principalOf(request).identityId,
        request.params.organizationId,
        request.params.invitationId,
      );
      return reply.code(204).send();
    },
  );

  app.post(
    '/organization-invitations/lookups',
    {
      // No session: the token is the credential. Bounded per client address like a code's answer.
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'organization-invitation-lookups'),
      schema: {
        tags: TAGS,
        summary: 'What an invitation token invites to (no session needed)',
        description:
          'Unknown, expired, revoked and accepted tokens each answer their own refusal: the token is the ' +
          'secret, so telling its holder what became of it reveals nothing.',
        body: TokenBody,
        response: responses({ 200: Data(InvitationLookupSchema) }, TOKEN_REFUSALS, {
          body: true,
          rateLimited: true,
        }),
      },
    },
    async (request) => envelope(await service.lookup(request.body.token)),
  );

  app.post(
    '/organization-invitations/acceptances',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Accept an invitation: the caller becomes a member with its role (audited)',
        description:
          'The caller must hold the invited email address or phone number verified (403 ' +
          'organization.invitation_wrong_identity). Of two acceptances at once, one answers 201 and the ' +
          'other 409 organization.invitation_accepted.',
        security: security.session,
        body: TokenBody,
        response: responses(
          { 201: Data(InvitationAcceptanceSchema) },
          [
            ...SESSION_REFUSALS,
            ...TOKEN_REFUSALS,
            'organization.invitation_wrong_identity',
            'organization.already_member',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(envelope(await service.accept(principalOf(request).identityId, request.body.token))),
  );
}
