import type { AppContext } from '../../context.js';
import { guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import * as schema from './schemas.js';
import { StepUpService } from './service.js';

export const stepUpRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new StepUpService(ctx);
  const { session, security } = guards(ctx.auth);

  app.post(
    '/step-ups',
    {
      preHandler: session,
      config: { optionalBody: true },
      schema: {
        tags: ['step-up'],
        summary:
          'Start a step-up: authenticator code (default when enrolled) or a code sent to the identifier',
        security: security.session,
        body: schema.StepUpBody,
        response: responses(
          { 201: Data(schema.StepUpChallengeSchema) },
          ['identity.session_required', 'identity.step_up_unavailable'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const challenge = await service.start(principalOf(request), request.body.channel);
      return reply.code(201).send(envelope(challenge));
    },
  );

  app.post(
    '/step-ups/confirmations',
    {
      preHandler: session,
      schema: {
        tags: ['step-up'],
        summary: 'Answer a step-up and receive an elevation token bound to this session (5 minutes)',
        security: security.session,
        body: schema.StepUpConfirmationBody,
        response: responses(
          { 201: Data(schema.ElevationSchema) },
          ['identity.session_required', 'identity.step_up_confirmation_refused', 'identity.step_up_locked'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const { challengeId, code } = request.body;
      return reply.code(201).send(envelope(await service.confirm(principalOf(request), challengeId, code)));
    },
  );
});
