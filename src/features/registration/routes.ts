import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { requestMeta } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { limitFor, senderOf, sendingRouteLimit } from '../../platform/rate-limit/rate-limit.js';
import { localeOfRequest } from '../../shared/locales.js';
import { SessionGrantSchema } from '../sessions/schemas.js';
import { SignInCompletion } from '../sign-in/complete.js';
import { SecondFactorTicketSchema } from '../sign-in/schemas.js';
import * as schema from './schemas.js';
import { RegistrationService } from './service.js';

// `type: 'null'` makes the OpenAPI document show the 204 without a body.
const Confirmed = Type.Null({ description: 'No content: the identifier is verified and the password set' });

export const registrationRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  // Built from the configuration here, once: the code's shape depends on the configured format.
  const ConfirmationBody = schema.confirmationBody(ctx.config);
  const SignUpBody = schema.signUpBody(ctx.config);
  const service = new RegistrationService(ctx);
  // A sign-up by code's confirmation opens a session as every sign-in does (sign-in/complete.ts).
  const { complete } = new SignInCompletion(ctx);
  for (const shared of [SessionGrantSchema, SecondFactorTicketSchema]) app.addSchema(shared);
  const byCode = ctx.config.signInCodes.signUp
    ? ' With SIGN_IN_CODES_SIGN_UP=on the password may be omitted (sign-up by code, on a channel SIGN_IN_CODES ' +
      'names, else 422 identity.identifier_channel_unavailable): then an address already verified by its owner ' +
      'answers the same 201 too, never 409, and its owner is sent a code that signs in (or, when the owner may ' +
      'not sign in by code, a notice that an account exists).'
    : '';

  app.post(
    '/sign-ups',
    {
      // Every request counts against the route's wider limiter (answered in onRequest, so a refused
      // attempt never reaches the handler); only a sign-up that sends its code counts against
      // SENDS_A_MESSAGE for the client address, in the service's transaction.
      config: sendingRouteLimit(ctx.config.rateLimits, 'sign-ups'),
      schema: {
        tags: ['registration'],
        summary: 'Register an email address or phone number with a password; a verification code is sent',
        description:
          'Answers 201 for a new address and for a repeat of an address still unverified, with the same bytes ' +
          'apart from challengeExpiresAt. Each registration gets its own code and keeps its own password; earlier ' +
          'codes stay valid. A failed delivery still registers (challengeDelivery.status NOT_DELIVERED). Only ' +
          'sign-ups that send a code count against RATE_LIMIT_SENDS_A_MESSAGE for the client address (and ' +
          'the destination); a refusal (400, 409, 422) sends nothing and spends nothing of it, and counts ' +
          'only against the wider per-address RATE_LIMIT_ANSWERS_A_CHALLENGE. Past either, 429 ' +
          'rate_limit.exceeded with Retry-After (whole seconds until the window frees a slot): nothing is ' +
          'sent or written. A password too easy to guess (zxcvbn score under 3, the identifier counted as ' +
          'guessable) is 400 validation.failed, code weak_password, with the reason in plain words; a ' +
          'password known from data breaches (the bundled list, or the range API of ' +
          'BREACHED_PASSWORDS_RANGE_URL) is 400 validation.failed, code breached_password.' +
          byCode,
        body: SignUpBody,
        response: responses(
          { 201: Data(schema.SignUpResult) },
          [
            'identity.identifier_taken',
            'identity.identifier_unusable',
            'identity.identifier_channel_unavailable',
            'hooks.refused',
            'hooks.unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      // The page's language when it says one, else the request's (docs/messages.md, "Which language").
      const locale =
        request.body.locale ?? localeOfRequest(request.headers['accept-language'], ctx.config.defaultLocale);
      const result = await service.signUp(request.body, senderOf(request), locale);
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
          'the identical 422 identity.verification_refused.' +
          (ctx.config.signInCodes.signUp
            ? ' Without the password (SIGN_IN_CODES_SIGN_UP=on), the code of a sign-up by code verifies the address ' +
              'and answers 201 with a session (or a second-factor ticket, for an owner who holds a second factor); ' +
              "its attempts are charged to the address's sign-in-code guess budget (RATE_LIMIT_GUESSES)."
            : ''),
        body: ConfirmationBody,
        response: responses(
          {
            // A sign-up by code confirmed (SIGN_IN_CODES_SIGN_UP=on): its first session.
            201: Data(Type.Union([Type.Ref(SessionGrantSchema), Type.Ref(SecondFactorTicketSchema)])),
            204: Confirmed,
          },
          [
            'identity.identifier_unusable',
            'identity.verification_refused',
            'hooks.refused',
            'hooks.unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.password === undefined) {
        const result = await service.confirmByCode(body, requestMeta(request), complete);
        return reply.code(201).send(envelope(result));
      }
      await service.confirm({ ...body, password: body.password });
      return reply.code(204).send();
    },
  );
});
