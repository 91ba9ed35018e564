import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { listScope, principalOf, requireElevation, requireSession } from '../../platform/http/auth.js';
import { envelope, page } from '../../platform/http/envelope.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import { PageQuerySchema } from '../../platform/pagination/page.js';
import {
  ConfirmationBody,
  EnrolmentBody,
  EnrolmentSchema,
  FactorParams,
  SecondFactorPageSchema,
} from './schemas.js';
import { SecondFactorService } from './service.js';
import { secondFactorSignInRoutes } from './sign-in-routes.js';

export async function secondFactorRoutes(root: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const service = new SecondFactorService(ctx);
  const session = requireSession(ctx.auth);
  // Session first (a dead session answers 401), then the elevation (403): interface 5.3.
  const elevated = [session, requireElevation(ctx.auth)];
  const bearer = [{ bearer: [] }];
  const bearerAndElevation = [{ bearer: [], elevation: [] }];

  await app.register(secondFactorSignInRoutes, { ctx });

  app.get(
    '/second-factors',
    {
      preHandler: session,
      schema: {
        tags: ['second-factors'],
        summary: 'Verified second factors of the caller, newest first (paged)',
        security: bearer,
        querystring: PageQuerySchema,
        response: responses({ 200: SecondFactorPageSchema }, [
          'identity.session_required',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.list(listScope(request), request.query);
      return page(items, pageInfo);
    },
  );

  app.post(
    '/second-factors',
    {
      preHandler: elevated,
      config: { optionalBody: true },
      schema: {
        tags: ['second-factors'],
        summary: 'Start an authenticator enrolment (secret shown once; earlier pending enrolment revoked)',
        security: bearerAndElevation,
        body: EnrolmentBody,
        response: responses(
          { 201: Data(EnrolmentSchema) },
          ['identity.session_required', 'identity.elevation_required'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const enrolment = await service.enrol(principalOf(request).identityId, request.body.label ?? null);
      return reply.code(201).send(envelope(enrolment));
    },
  );

  app.post(
    '/second-factors/confirmations',
    {
      preHandler: session,
      schema: {
        tags: ['second-factors'],
        summary: 'Confirm the pending enrolment with its current code',
        security: bearer,
        body: ConfirmationBody,
        response: responses(
          { 204: NoContent },
          [
            'identity.session_required',
            'identity.second_factor_confirmation_refused',
            'identity.second_factor_locked',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      await service.confirm(principalOf(request).identityId, request.body.code);
      return reply.code(204).send();
    },
  );

  app.post(
    '/second-factors/:id/removals',
    {
      preHandler: elevated,
      schema: {
        tags: ['second-factors'],
        summary: 'Remove a verified second factor (audited)',
        security: bearerAndElevation,
        params: FactorParams,
        response: responses({ 204: NoContent }, [
          'identity.session_required',
          'identity.elevation_required',
          'identity.second_factor_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await service.remove(principalOf(request).identityId, request.params.id);
      return reply.code(204).send();
    },
  );
}
