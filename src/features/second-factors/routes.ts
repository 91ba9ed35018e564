import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { listRoute } from '../../platform/http/list-route.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import * as schema from './schemas.js';
import { SecondFactorService } from './service.js';

export const secondFactorRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new SecondFactorService(ctx);
  const { session, elevated, security } = guards(ctx.auth);

  listRoute(app, '/second-factors', {
    tags: ['second-factors'],
    summary: 'Verified second factors of the caller, newest first (paged)',
    guard: session,
    security: security.session,
    page: schema.SecondFactorPageSchema,
    revalidates: false,
    list: (scope, query) => service.list(scope, query),
  });

  app.post(
    '/second-factors',
    {
      preHandler: elevated,
      config: { optionalBody: true },
      schema: {
        tags: ['second-factors'],
        summary: 'Start an authenticator enrolment (secret shown once; earlier pending enrolment revoked)',
        security: security.elevated,
        body: schema.EnrolmentBody,
        response: responses({ 201: Data(schema.EnrolmentSchema) }, [...ELEVATION_REFUSALS], { body: true }),
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
        security: security.session,
        body: schema.ConfirmationBody,
        response: responses(
          { 204: NoContent },
          [
            'identity.session_required',
            'identity.second_factor_confirmation_refused',
            'identity.second_factor_locked',
          ],
          { body: true, rateLimited: true },
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
        security: security.elevated,
        params: schema.FactorParams,
        response: responses({ 204: NoContent }, [...ELEVATION_REFUSALS, 'identity.second_factor_not_found']),
      },
    },
    async (request, reply) => {
      await service.remove(principalOf(request).identityId, request.params.id);
      return reply.code(204).send();
    },
  );
});
