import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import { limitFor, senderOf, sendingRouteLimit } from '../../platform/rate-limit/rate-limit.js';
import * as schema from './schemas.js';
import { PasswordService } from './service.js';

export const passwordRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { session, elevated, security } = guards(ctx.auth);
  const service = new PasswordService(ctx);
  const ConfirmationBody = schema.recoveryConfirmationBody(ctx.config);

  app.post(
    '/password-changes',
    {
      preHandler: session,
      // It proves a password, so a stolen access token cannot be used to guess the current one fast.
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'password-changes'),
      schema: {
        tags: ['passwords'],
        summary: 'Change the password; every other session ends, the calling one stays',
        description:
          'Every failure (wrong current password, an identity without a password, a password changed meanwhile) ' +
          'answers the identical 422 identity.password_change_refused. A new password outside 12..200 characters ' +
          "or too easy to guess (zxcvbn score under 3, the caller's own addresses counted as guessable) is 400 " +
          'validation.failed (code weak_password with the reason in plain words; breached_password for a ' +
          'password known from data breaches), decided before the current ' +
          'password is checked. ' +
          "Wrong current passwords count against the identity's guess budget (RATE_LIMIT_GUESSES) and lock: past " +
          'the free failures an early attempt answers 429 rate_limit.exceeded with Retry-After, right or wrong, unchecked.',
        security: security.session,
        body: schema.PasswordChangeBody,
        response: responses(
          { 204: NoContent },
          ['identity.session_required', 'identity.password_change_refused'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      await service.change(principalOf(request), request.body);
      return reply.code(204).send();
    },
  );

  app.post(
    '/sign-in-methods/passwords',
    {
      preHandler: elevated,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-in-methods/passwords'),
      schema: {
        tags: ['sign-in-methods'],
        summary: 'Add a password to an account that has none (a sign-up by code, a provider sign-up)',
        description:
          'Requires a session and an elevation (the step-up stands in for the current password there is not). ' +
          'The password then appears among the sign-in methods; other sessions go on. An account that already has ' +
          'a password answers 409 identity.password_exists (change it with POST /password-changes). A new ' +
          'password outside 12..200 characters or too easy to guess is 400 validation.failed (code weak_password).',
        security: security.elevated,
        body: schema.PasswordAddBody,
        response: responses({ 204: NoContent }, [...ELEVATION_REFUSALS, 'identity.password_exists'], {
          body: true,
          rateLimited: true,
        }),
      },
    },
    async (request, reply) => {
      await service.add(principalOf(request), request.body);
      return reply.code(204).send();
    },
  );

  app.post(
    '/password-recoveries',
    {
      // Every request counts against the route's wider limiter; only a 201 counts against
      // SENDS_A_MESSAGE for the client address (in the service's transaction).
      config: sendingRouteLimit(ctx.config.rateLimits, 'password-recoveries'),
      schema: {
        tags: ['passwords'],
        summary: 'Send a password recovery code to a verified address',
        description:
          'Answers the same 201, in the same time, whether or not the address belongs to an account. The code ' +
          'is sent only to a verified address of an account, just after the answer. Every 201 counts against ' +
          'RATE_LIMIT_SENDS_A_MESSAGE for the client address and for the destination, known or not; a refusal ' +
          '(400, 422) spends nothing of it and counts only against the wider per-address ' +
          'RATE_LIMIT_ANSWERS_A_CHALLENGE. Past either, 429 rate_limit.exceeded with Retry-After: nothing is sent.',
        body: schema.RecoveryStartBody,
        response: responses(
          { 201: Data(schema.RecoveryChallengeSchema) },
          ['identity.identifier_unusable', 'identity.identifier_channel_unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) =>
      reply.code(201).send(envelope(await service.start(request.body, senderOf(request)))),
  );

  app.post(
    '/password-recoveries/confirmations',
    {
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'password-recoveries/confirmations'),
      schema: {
        tags: ['passwords'],
        summary: 'Set a new password with the recovery code; every session of the identity ends',
        description:
          'Every failure (unknown or unusable address, wrong, spent, expired or exhausted code) answers the ' +
          'identical 422 identity.password_recovery_refused. Wrong codes count toward the account lock. A new ' +
          'password outside 12..200 characters or too easy to guess (zxcvbn score under 3, the address given ' +
          'counted as guessable) is 400 validation.failed (code weak_password with the reason in plain words; ' +
          'breached_password for a password known from data breaches), ' +
          'decided before the code is looked at.',
        body: ConfirmationBody,
        response: responses({ 204: NoContent }, ['identity.password_recovery_refused'], {
          body: true,
          rateLimited: true,
        }),
      },
    },
    async (request, reply) => {
      await service.confirm(request.body);
      return reply.code(204).send();
    },
  );
});
