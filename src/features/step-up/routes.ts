import type { AppContext } from '../../context.js';
import { guards, principalOf, requestMeta, SESSION_REFUSALS } from '../../platform/http/auth.js';
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
        summary: 'Start a step-up: prove the strongest factor the identity holds',
        description:
          'With a verified authenticator: channel second_factor (the default) or recovery_code; the identifier ' +
          'channel is then refused (422). Without one: identifier, which sends a code to the first verified ' +
          'identifier and counts against SENDS_A_MESSAGE per identity, per address and per destination (429 past it).',
        security: security.session,
        body: schema.StepUpBody,
        response: responses(
          { 201: Data(schema.StepUpChallengeSchema) },
          [...SESSION_REFUSALS, 'identity.step_up_unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const challenge = await service.start(principalOf(request), request.body.channel, requestMeta(request));
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
          [...SESSION_REFUSALS, 'identity.step_up_confirmation_refused', 'identity.step_up_locked'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const { challengeId, code } = request.body;
      return reply.code(201).send(envelope(await service.confirm(principalOf(request), challengeId, code)));
    },
  );
});
