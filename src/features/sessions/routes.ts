import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { guards, principalOf, requireSession } from '../../platform/http/auth.js';
import { conditionalGet } from '../../platform/http/conditional.js';
import { envelope } from '../../platform/http/envelope.js';
import { listRoute } from '../../platform/http/list-route.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, IdInput, NoContent, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { browserSessionRoutes } from './browser-session.js';
import { type SessionContextRow, type SessionState, sessionContext } from './repository.js';
import * as schema from './schemas.js';

export const sessionRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = ctx.sessions;
  const { session: guard, security } = guards(ctx.auth);
  app.addSchema(schema.SessionGrantSchema);

  app.post(
    '/sign-ins/renewals',
    {
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sign-ins/renewals'),
      schema: {
        tags: ['sessions'],
        summary: 'Exchange a refresh token for a new pair (single use; replay ends the session)',
        body: schema.RenewalBody,
        response: responses(
          { 201: Data(Type.Ref(schema.SessionGrantSchema)) },
          ['identity.renewal_refused'],
          {
            body: true,
            rateLimited: true,
          },
        ),
      },
    },
    async (request, reply) => reply.code(201).send(envelope(await service.renew(request.body.refreshToken))),
  );

  app.post(
    '/sign-outs',
    {
      preHandler: guard,
      schema: {
        tags: ['sessions'],
        summary: 'End the calling session',
        security: security.session,
        response: responses({ 204: NoContent }, ['identity.session_required']),
      },
    },
    async (request, reply) => {
      await service.signOut(principalOf(request).sessionId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/sign-outs/everywhere',
    {
      preHandler: guard,
      schema: {
        tags: ['sessions'],
        summary: 'End every session of the identity (audited)',
        security: security.session,
        response: responses({ 204: NoContent }, ['identity.session_required']),
      },
    },
    async (request, reply) => {
      await service.signOutEverywhere(principalOf(request).identityId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/sign-outs/others',
    {
      preHandler: guard,
      schema: {
        tags: ['sessions'],
        summary: 'End every other session of the identity; the calling one stays (audited)',
        description:
          "Every session of the identity but the caller's ends at its very next request on every instance, " +
          'sign-ins still committing included, and their refresh tokens stop working; one session.ended ' +
          'event each (reason signed_out_others). Not an error when no other session is live. The calling ' +
          'session keeps working with the tokens it holds.',
        security: security.session,
        response: responses({ 204: NoContent }, ['identity.session_required']),
      },
    },
    async (request, reply) => {
      await service.signOutOthers(principalOf(request));
      return reply.code(204).send();
    },
  );

  app.get(
    '/session/context',
    {
      // The guard's session read also brings the summary and the memberships: one round trip.
      preHandler: requireSession(ctx.auth, (sessionId) => sessionContext(ctx.database.db, sessionId)),
      schema: {
        tags: ['sessions'],
        summary:
          'The caller, its masked identifiers, active methods and organizations, the active one marked (weak ETag)',
        security: security.session,
        response: responses({ 200: Data(schema.SessionContextSchema), 304: NoContent }, [
          'identity.session_required',
        ]),
      },
    },
    async (request, reply) => {
      const { identityId, sessionId } = principalOf(request);
      const body = envelope(service.context(identityId, sessionId, request.sessionRow as SessionContextRow));
      if (conditionalGet(request, reply, body)) return reply.code(304).send();
      return body;
    },
  );

  app.post(
    '/session/active-organization',
    {
      preHandler: guard,
      schema: {
        tags: ['sessions', 'organizations'],
        summary:
          'Act in one organization (or none): a new access token carrying it, in the same answer (audited)',
        description:
          'The access token carries org_id, org_role and org_permissions of the active organization ' +
          '(docs/organizations.md). The refresh token is not rotated: keep the one you hold; every renewal ' +
          're-reads the membership. Not a member: 404 organization.not_found; an organization that requires ' +
          'a second factor of a member with neither an authenticator nor a passkey: 403 ' +
          'organization.second_factor_required.',
        security: security.session,
        body: schema.ActiveOrganizationBody,
        response: responses(
          { 200: Data(schema.OrganizationSwitchSchema) },
          ['identity.session_required', 'organization.not_found', 'organization.second_factor_required'],
          { body: true },
        ),
      },
    },
    async (request) => {
      const { identityId, sessionId } = principalOf(request);
      return envelope(
        await service.switchOrganization(
          identityId,
          sessionId,
          request.body.organizationId,
          (request.sessionRow as SessionState).expiresAt,
        ),
      );
    },
  );

  listRoute(app, '/sign-ins/history', {
    tags: ['sessions'],
    summary: 'Sign-in attempts attributed to the caller, newest first (paged, weak ETag)',
    guard: guard,
    security: security.session,
    page: schema.HistoryPageSchema,
    revalidates: true,
    list: (scope, query) => service.history(scope, query),
  });

  listRoute(app, '/sessions', {
    tags: ['sessions'],
    summary: "The caller's live sessions, newest first, each with its device and address (paged, weak ETag)",
    description:
      'One entry per live session of the identity (not ended, not expired): when it started and was last ' +
      'renewed, its absolute end, how it was opened, the device parsed from the user agent it started with, ' +
      "the address it started from, and current: true on the caller's own. Never a token or hash.",
    guard: guard,
    security: security.session,
    page: schema.LiveSessionPageSchema,
    revalidates: true,
    list: (scope, query, request) => service.liveSessions(scope, query, principalOf(request).sessionId),
  });

  app.post(
    '/sessions/:id/revocations',
    {
      preHandler: guard,
      schema: {
        tags: ['sessions'],
        summary: 'End one of the caller’s sessions (another device, or this one like sign-out); audited',
        description:
          'The session is refused at its very next request on every instance and its refresh token stops ' +
          "working. An unknown id, another identity's session and one already ended answer the identical 404.",
        security: security.session,
        params: Type.Object({ id: IdInput }, { additionalProperties: false }),
        response: responses({ 204: NoContent }, ['identity.session_required', 'identity.session_not_found']),
      },
    },
    async (request, reply) => {
      await service.revokeOwnSession(principalOf(request).identityId, request.params.id);
      return reply.code(204).send();
    },
  );

  // The hosted pages' HttpOnly cookie session (browser-session.ts): its own plugin, so its
  // same-origin guard and CORS stripping touch no other route.
  await app.register(browserSessionRoutes, {
    sessions: service,
    clock: ctx.clock,
    publicOrigin: ctx.config.publicOrigin,
    rateLimit: ctx.config.rateLimits.provesAPassword,
  });

  // Public signing keys (GET /.well-known/jwks.json, docs/api.md, "1. Sign in"): outside /api,
  // registered on the root instance by app.ts.
});

export async function jwksRoute(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['sessions'],
        summary: "Public keys that verify access tokens and the OpenID Provider's ID tokens",
        response: {
          200: Type.Object({ keys: Type.Array(Type.Object({}, { additionalProperties: true })) }),
        },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      // One key set: the access tokens' keys and the OpenID Provider's (kids are UUIDs, unique).
      return { keys: [...ctx.tokens.jwks().keys, ...ctx.oidc.publicKeys()] };
    },
  );
}
