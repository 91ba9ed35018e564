import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf, requestMeta } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import { PasskeyActs, PasskeyService } from './service.js';

/** Registered only when a WebAuthn relying party is configured (config.webauthn). */
export const passkeyRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, elevated, security } = guards(ctx.auth);
  const passkeys = new PasskeyService(ctx);
  const acts = new PasskeyActs(ctx, passkeys);
  const { provesAPassword } = ctx.config.rateLimits;

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

  app.post(
    '/sign-ins/passkeys/options',
    {
      // No body at all is the usual request (the button on a sign-in page): taken as `{}`.
      config: { ...limitFor(provesAPassword, 'sign-ins/passkeys/options'), optionalBody: true },
      schema: {
        tags: ['passkeys'],
        summary: 'Request options for a passkey sign-in (navigator.credentials.get), single use, 5 minutes',
        description:
          'No body is needed. An identifier may be sent; the answer is the same whether it exists or has passkeys ' +
          '(allowCredentials is always empty: the authenticator offers this site’s discoverable passkeys).',
        body: Type.Optional(schema.SignInOptionsBody),
        response: responses({ 201: Data(schema.RequestOptionsSchema) }, [], {
          body: true,
          rateLimited: true,
        }),
      },
    },
    async (_request, reply) => reply.code(201).send(envelope(await passkeys.requestOptions('sign_in'))),
  );

  app.post(
    '/sign-ins/passkeys',
    {
      config: limitFor(provesAPassword, 'sign-ins/passkeys'),
      schema: {
        tags: ['passkeys'],
        summary: 'Sign in with a passkey: the AuthenticationResponseJSON of navigator.credentials.get',
        description:
          'A passkey with user verification is two factors: a session opens at once, no second-factor ticket. ' +
          'Every failure (unknown or removed credential, bad signature, another origin or RP ID, no user ' +
          'verification, an unknown, expired or spent challenge, a counter that went backwards) answers the ' +
          'identical 401 identity.sign_in_refused.',
        body: schema.AssertionBody,
        response: responses({ 201: Data(schema.PasskeyGrantSchema) }, ['identity.sign_in_refused'], {
          body: true,
          rateLimited: true,
        }),
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          envelope(
            await acts.signIn(request.body.credential as AuthenticationResponseJSON, requestMeta(request)),
          ),
        ),
  );

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
            await acts.stepUp(principalOf(request), request.body.credential as AuthenticationResponseJSON),
          ),
        ),
  );
});
