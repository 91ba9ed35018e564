import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { listScope, principalOf, requireElevation, requireSession } from '../../platform/http/auth.js';
import { conditionalGet } from '../../platform/http/conditional.js';
import { envelope, page } from '../../platform/http/envelope.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import { PageQuerySchema } from '../../platform/pagination/page.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import {
  AddMethodBody,
  ChallengeStarted,
  confirmationBody,
  MethodIdParams,
  ProviderLinked,
  SignInMethodPage,
} from './schemas.js';
import { SignInMethodService } from './service.js';

export async function signInMethodRoutes(root: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const service = new SignInMethodService(ctx);
  const session = requireSession(ctx.auth);
  const elevation = requireElevation(ctx.auth);
  // Session first (401), then the elevation (403): interface 5.3.
  const elevated = [session, elevation];
  const ConfirmationBody = confirmationBody(ctx.config);

  app.get(
    '/sign-in-methods',
    {
      preHandler: session,
      schema: {
        tags: ['sign-in-methods'],
        summary:
          'The verified ways to sign in: identifiers, the password and linked providers (paged, weak ETag)',
        description:
          'Newest first. The password has no row of its own: its id is derived from the identity (a version-8 ' +
          'UUID that stays the same across password changes) and is what POST /sign-in-methods/{id}/removals takes.',
        security: [{ bearer: [] }],
        querystring: PageQuerySchema,
        response: responses({ 200: SignInMethodPage, 304: NoContent }, [
          'identity.session_required',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
        ]),
      },
    },
    async (request, reply) => {
      const { items, pageInfo } = await service.list(listScope(request), request.query);
      if (conditionalGet(request, reply, { items, hasNextPage: pageInfo.hasNextPage }))
        return reply.code(304).send();
      return page(items, pageInfo);
    },
  );

  app.post(
    '/sign-in-methods',
    {
      preHandler: elevated,
      // The identifier form sends a message.
      config: limitFor(ctx.config.rateLimits.sendsAMessage, 'sign-in-methods'),
      schema: {
        tags: ['sign-in-methods'],
        summary: 'Add an email address or phone number (a code is sent) or link a provider (at once)',
        description:
          'Identifier form: 201 with the challenge; confirm with POST /sign-in-methods/confirmations. An address ' +
          'verified by any identity answers 409 identity.identifier_taken. Provider form: the ID token must carry ' +
          'the hex SHA-256 of a live nonce from POST /provider-nonces; 201 with the new method id. A refused token ' +
          'or nonce answers 422 identity.sign_in_method_confirmation_refused; a subject already linked answers 409.',
        security: [{ bearer: [], elevation: [] }],
        body: AddMethodBody,
        response: responses(
          { 201: Data(Type.Union([ChallengeStarted, ProviderLinked])) },
          [
            'identity.session_required',
            'identity.elevation_required',
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
      const result = await service.add(principalOf(request), request.body);
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
          'locked account and clears the lock.',
        security: [{ bearer: [], elevation: [] }],
        body: ConfirmationBody,
        response: responses(
          { 204: NoContent },
          [
            'identity.session_required',
            'identity.elevation_required',
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
        security: [{ bearer: [], elevation: [] }],
        params: MethodIdParams,
        response: responses({ 204: NoContent }, [
          'identity.session_required',
          'identity.elevation_required',
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
}
