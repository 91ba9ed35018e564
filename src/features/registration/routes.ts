import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import { RegistrationService } from './service.js';

// `type: 'null'` makes the OpenAPI document show the 204 without a body.
const Confirmed = Type.Null({ description: 'No content: the identifier is verified and the password set' });

export const registrationRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  // Built from the configuration here, once: the code's shape depends on the configured format.
  const ConfirmationBody = schema.confirmationBody(ctx.config);
  const service = new RegistrationService(ctx);

  app.post(
    '/sign-ups',
    {
      // The limiter answers in onRequest, so a refused attempt never reaches the handler and sends nothing.
      config: limitFor(ctx.config.rateLimits.sendsAMessage, 'sign-ups'),
      schema: {
        tags: ['registration'],
        summary: 'Register an email address or phone number with a password; a verification code is sent',
        description:
          'Answers 201 for a new address and for a repeat of an address still unverified, with the same bytes ' +
          'apart from challengeExpiresAt. Each registration gets its own code and keeps its own password; earlier ' +
          'codes stay valid. A failed delivery still registers (challengeDelivery.status NOT_DELIVERED).',
        body: schema.SignUpBody,
        response: responses(
          { 201: Data(schema.SignUpResult) },
          [
            'identity.identifier_taken',
            'identity.identifier_unusable',
            'identity.identifier_channel_unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const result = await service.signUp(request.body);
      return reply.code(201).send(envelope(result));
    },
  );

  app.post(
    '/sign-ups/confirmations',
    {
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ups-confirmations'),
      schema: {
        tags: ['registration'],
        summary: 'Confirm a registration with the code that was sent and the password of that registration',
        description:
          'Every failure (wrong code, wrong password, unknown address, spent, exhausted or expired code) answers ' +
          'the identical 422 identity.verification_refused.',
        body: ConfirmationBody,
        response: responses(
          { 204: Confirmed },
          ['identity.identifier_unusable', 'identity.verification_refused'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      await service.confirm(request.body);
      return reply.code(204).send();
    },
  );
});
