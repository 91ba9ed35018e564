import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import { PasskeyService, PasskeyStepUp } from './service.js';

/** Registered only when a WebAuthn relying party is configured (config.webauthn): passkey registration. */
export const passkeyRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { elevated, security } = guards(ctx.auth);
  const passkeys = new PasskeyService(ctx);

  app.post(
    '/passkeys/options',
    {
      preHandler: elevated,
      // Each answer writes a challenge row.
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'passkeys/options'),
      schema: {
        tags: ['passkeys'],
        summary: 'Creation options for a new passkey (navigator.credentials.create), single use, 5 minutes',
        description:
          'Bound to the calling session. User verification required, a discoverable credential preferred, ' +
          'the identity’s passkeys excluded, algorithms ES256, EdDSA and RS256, attestation "none".',
        security: security.elevated,
        response: responses({ 201: Data(schema.CreationOptionsSchema) }, [...ELEVATION_REFUSALS], {
          rateLimited: true,
        }),
      },
    },
    async (request, reply) =>
      reply.code(201).send(envelope(await passkeys.registrationOptions(principalOf(request)))),
  );

  app.post(
    '/passkeys',
    {
      preHandler: elevated,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'passkeys'),
      schema: {
        tags: ['passkeys'],
        summary: 'Register a passkey: the RegistrationResponseJSON of navigator.credentials.create',
        description:
          'Every failed check (a challenge that is unknown, spent, expired or another session’s, another ' +
          'origin or RP ID, no user verification, a malformed attestation) answers the identical 422. A ' +
          'credential already registered answers 409 identity.identifier_taken. The passkey then appears in ' +
          'GET /sign-in-methods (kind passkey) and is removed with POST /sign-in-methods/{id}/removals.',
        security: security.elevated,
        body: schema.RegisterBody,
        response: responses(
          { 201: Data(schema.PasskeyRegistered) },
          [
            ...ELEVATION_REFUSALS,
            'identity.identifier_taken',
            'identity.sign_in_method_confirmation_refused',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) =>
      reply.code(201).send(
        envelope(
          await passkeys.register(principalOf(request), {
            // The schema is the standard JSON; only its transport names are wider (any string).
            credential: request.body.credential as RegistrationResponseJSON,
            label: request.body.label,
          }),
        ),
      ),
  );
});

/**
 * The passkey step-up. Its own plugin, registered after the passkey sign-in
 * (sign-in/routes.ts), so the OpenAPI document keeps its order.
 */
export const passkeyStepUpRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, security } = guards(ctx.auth);
  const passkeys = new PasskeyService(ctx);
  const stepUp = new PasskeyStepUp(ctx, passkeys);

  app.post(
    '/step-ups/passkeys/options',
    {
      preHandler: session,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'step-ups/passkeys/options'),
      schema: {
        tags: ['step-up'],
        summary: 'Request options for a step-up with one of the caller’s passkeys, single use, 5 minutes',
        security: security.session,
        response: responses({ 201: Data(schema.RequestOptionsSchema) }, ['identity.session_required'], {
          rateLimited: true,
        }),
      },
    },
    async (request, reply) =>
      reply.code(201).send(envelope(await passkeys.requestOptions('step_up', principalOf(request)))),
  );

  app.post(
    '/step-ups/passkeys',
    {
      preHandler: session,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'step-ups/passkeys'),
      schema: {
        tags: ['step-up'],
        summary: 'Mint an elevation with an assertion by one of the caller’s passkeys',
        description:
          'Every failure (another identity’s passkey, a challenge of another session, and every refusal of ' +
          'passkey sign-in) answers the identical 403 identity.step_up_confirmation_refused.',
        security: security.session,
        body: schema.AssertionBody,
        response: responses(
          { 201: Data(schema.ElevationSchema) },
          ['identity.session_required', 'identity.step_up_confirmation_refused'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          envelope(
            await stepUp.stepUp(principalOf(request), request.body.credential as AuthenticationResponseJSON),
          ),
        ),
  );
});
