import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { requestMeta } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { SecondStepBody, SecondStepGrantSchema } from './schemas.js';
import { SecondFactorService } from './service.js';

/** The second step of a sign-in: no session yet, the ticket is the credential. */
export async function secondFactorSignInRoutes(root: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const service = new SecondFactorService(ctx);

  app.post(
    '/sign-ins/second-factors',
    {
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ins/second-factors'),
      schema: {
        tags: ['sessions'],
        summary: 'Complete a sign-in with an authenticator code or a recovery code',
        body: SecondStepBody,
        response: responses(
          { 201: Data(SecondStepGrantSchema) },
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
}
