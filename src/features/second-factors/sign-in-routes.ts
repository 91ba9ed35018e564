import type { AppContext } from '../../context.js';
import { requestMeta } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import { SecondFactorService } from './service.js';

/** The second step of a sign-in: no session yet, the ticket is the credential. */
export const secondFactorSignInRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new SecondFactorService(ctx);

  app.post(
    '/sign-ins/second-factors',
    {
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ins/second-factors'),
      schema: {
        tags: ['sessions'],
        summary: 'Complete a sign-in with an authenticator code or a recovery code',
        body: schema.SecondStepBody,
        response: responses(
          { 201: Data(schema.SecondStepGrantSchema) },
          ['identity.second_factor_refused', 'identity.sign_in_second_factor_locked'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const { secondFactorTicket, ...proof } = request.body;
      const grant = await service.completeSignIn(secondFactorTicket, proof, requestMeta(request));
      return reply.code(201).send(envelope(grant));
    },
  );
});
