import type { AppContext } from '../../context.js';
import { guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import * as schema from './schemas.js';
import { ProviderService } from './service.js';

export const providerRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, security } = guards(ctx.auth);
  const service = new ProviderService(ctx);

  app.post(
    '/provider-nonces',
    {
      schema: {
        tags: ['providers'],
        summary: 'Issue a single-use nonce for provider sign-in or provider step-up (10 minutes)',
        description:
          'No body. The nonce is shown once. The client sends hex(SHA-256(nonce)) to the identity provider as ' +
          'its nonce parameter; the ID token presented to POST /sign-ins, POST /step-ups/providers or ' +
          'POST /sign-in-methods must carry exactly that value in its nonce claim.',
        response: responses({ 201: Data(schema.ProviderNonceSchema) }),
      },
    },
    async (_request, reply) => reply.code(201).send(envelope(await service.issueNonce())),
  );

  app.post(
    '/step-ups/providers',
    {
      preHandler: session,
      schema: {
        tags: ['step-up'],
        summary: 'Mint an elevation with a provider ID token for a subject linked to the caller',
        description:
          'Every failure (unknown provider, refused token, a subject not linked to the caller, a missing, ' +
          'unissued, expired or spent nonce) answers the identical 403 identity.step_up_confirmation_refused. ' +
          'An identity holding a verified second factor must prove it instead (an upstream account is one ' +
          'factor): 422 identity.step_up_unavailable, the nonce spent.',
        security: security.session,
        body: schema.ProviderStepUpBody,
        response: responses(
          { 201: Data(schema.ElevationSchema) },
          [
            'identity.session_required',
            'identity.step_up_confirmation_refused',
            'identity.step_up_unavailable',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) =>
      reply.code(201).send(envelope(await service.stepUp(principalOf(request), request.body))),
  );
});
