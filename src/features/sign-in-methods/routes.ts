import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { listRoute } from '../../platform/http/list-route.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import { limitFor, senderOf, sendingRouteLimit } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import { SignInMethodService } from './service.js';

export const signInMethodRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new SignInMethodService(ctx);
  const { session, elevated, security } = guards(ctx.auth);
  const ConfirmationBody = schema.confirmationBody(ctx.config);

  listRoute(app, '/sign-in-methods', {
    tags: ['sign-in-methods'],
    summary:
      'The verified ways to sign in: identifiers, the password and linked providers (paged, weak ETag)',
    description:
      'Newest first. The password has no row of its own: its id is derived from the identity (a version-8 ' +
      'UUID that stays the same across password changes) and is what POST /sign-in-methods/{id}/removals takes.',
    guard: session,
    security: security.session,
    page: schema.SignInMethodPage,
    revalidates: true,
    list: (scope, query) => service.list(scope, query),
  });

  app.post(
    '/sign-in-methods',
    {
      preHandler: elevated,
      // The identifier form sends a message: it counts against SENDS_A_MESSAGE for the client
      // address only when it does (in the service's transaction); every request, a provider link
      // or a refusal included, counts against the route's wider limiter.
      config: sendingRouteLimit(ctx.config.rateLimits, 'sign-in-methods'),
      schema: {
        tags: ['sign-in-methods'],
        summary: 'Add an email address or phone number (a code is sent) or link a provider (at once)',
        description:
          'Identifier form: 201 with the challenge; confirm with POST /sign-in-methods/confirmations. An address ' +
          'verified by any identity answers 409 identity.identifier_taken. Provider form: the ID token must carry ' +
          'the hex SHA-256 of a live nonce from POST /provider-nonces; 201 with the new method id. A refused token ' +
          'or nonce answers 422 identity.sign_in_method_confirmation_refused; a subject already linked answers 409. ' +
          'Only an identifier form that sends its code counts against RATE_LIMIT_SENDS_A_MESSAGE for the client ' +
          'address (and the destination); every request counts against the wider per-address ' +
          'RATE_LIMIT_ANSWERS_A_CHALLENGE. Past either, 429 rate_limit.exceeded with Retry-After: nothing is sent.',
        security: security.elevated,
        body: schema.AddMethodBody,
        response: responses(
          { 201: Data(Type.Union([schema.ChallengeStarted, schema.ProviderLinked])) },
          [
            ...ELEVATION_REFUSALS,
            'identity.identifier_taken',
            'identity.identifier_unusable',
            'identity.identifier_channel_unavailable',
            'identity.sign_in_method_confirmation_refused',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const result = await service.add(principalOf(request), request.body, senderOf(request));
      return reply.code(201).send(envelope(result));
    },
  );

  app.post(
    '/sign-in-methods/confirmations',
    {
      preHandler: elevated,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-in-methods/confirmations'),
      schema: {
        tags: ['sign-in-methods'],
        summary: 'Confirm an address being added with the code that was sent to it',
        description:
          "A wrong code, no live challenge, a spent code and another identity's code answer the identical 422. " +
          'Each miss charges every live challenge once and the account lock once; the miss that trips the lock ' +
          'still answers 422, and every later miss while locked answers 423. The correct code succeeds on a ' +
          'locked account and clears the lock. An email in a domain whose organization requires SSO ends every ' +
          'session of the identity, this one included (reason sso_required).',
        security: security.elevated,
        body: ConfirmationBody,
        response: responses(
          { 204: NoContent },
          [
            ...ELEVATION_REFUSALS,
            'identity.identifier_taken',
            'identity.sign_in_method_confirmation_refused',
            'identity.sign_in_method_locked',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      await service.confirm(principalOf(request), request.body.code);
      return reply.code(204).send();
    },
  );

  app.post(
    '/sign-in-methods/:id/removals',
    {
      preHandler: elevated,
      schema: {
        tags: ['sign-in-methods'],
        summary: 'Remove a sign-in method; the last way in cannot be removed',
        description:
          "Every other session of the identity ends (the caller's stays). An unknown, foreign or already " +
          'removed id answers the identical 404.',
        security: security.elevated,
        params: schema.MethodIdParams,
        response: responses({ 204: NoContent }, [
          ...ELEVATION_REFUSALS,
          'identity.sign_in_method_not_found',
          'identity.last_sign_in_method',
        ]),
      },
    },
    async (request, reply) => {
      await service.remove(principalOf(request), request.params.id);
      return reply.code(204).send();
    },
  );
});
