import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { guards, requestMeta } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { Problem } from '../../platform/problem.js';
import { limitFor, senderOf, sendingRouteLimit } from '../../platform/rate-limit/rate-limit.js';
import * as passkeySchema from '../passkeys/schemas.js';
import { PasskeyService } from '../passkeys/service.js';
import { FLOW_COOKIE_NOTE, noStore } from '../providers/flows/routes.js';
import { ProviderFlowService } from '../providers/flows/service.js';
import * as providerSchema from '../providers/schemas.js';
import { sameOriginOnly } from '../sessions/browser-session.js';
import { SessionGrantSchema } from '../sessions/schemas.js';
import { SignInCompletion } from './complete.js';
import { SignInLinks } from './links.js';
import * as schema from './schemas.js';
import { CodeStrategy } from './strategies/code.js';
import { LinkStrategy } from './strategies/link.js';
import { PasskeyStrategy } from './strategies/passkey.js';
import { PasswordStrategy } from './strategies/password.js';
import { ProviderRedirectStrategy } from './strategies/provider-redirect.js';
import { ProviderTokenStrategy } from './strategies/provider-token.js';
import { SecondStepStrategy } from './strategies/second-step.js';

/**
 * The sign-in routes: each way to prove who you are (strategies/) and the one completion
 * (complete.ts) that turns the proven identity into a session or a second-factor ticket.
 *
 * The plugins register where their routes always stood in the OpenAPI document (app.ts): POST
 * /sign-ins before the session routes, the second step before the second-factor routes, the
 * redirect flow's handoff after its start and callback, the passkey sign-in between passkey
 * registration and the passkey step-up. A new way in adds its route to `signInRoutes`.
 */
export const signInRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { complete } = new SignInCompletion(ctx);
  const password = new PasswordStrategy(ctx);
  const providerToken = new ProviderTokenStrategy(ctx);
  // Shared by every answer of a sign-in (and the session routes' renewal): registered first here.
  app.addSchema(SessionGrantSchema);
  app.addSchema(schema.SecondFactorTicketSchema);

  app.post(
    '/sign-ins',
    {
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sign-ins'),
      schema: {
        tags: ['sessions'],
        summary: 'Sign in with a password or a provider ID token',
        body: schema.SignInBody,
        response: responses(
          {
            201: Data(Type.Union([Type.Ref(SessionGrantSchema), Type.Ref(schema.SecondFactorTicketSchema)])),
          },
          ['identity.sign_in_refused', 'hooks.refused', 'hooks.unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const body = request.body;
      const meta = requestMeta(request);
      // Every provider failure is the same 401 as a wrong password (strategies/provider-token.ts).
      const result =
        body.identifierType === 'provider'
          ? await providerToken.signIn({ provider: body.provider, idToken: body.idToken }, meta, complete)
          : await password.signIn(body, meta, complete);
      return reply.code(201).send(envelope(result));
    },
  );

  // Sign-in by code (SIGN_IN_CODES): registered whatever the setting, so the document and the
  // client are the same everywhere; a channel the setting does not name is refused by configuration.
  // A code's message carries a link too when SIGN_IN_LINKS is on and the hosted pages it opens are.
  const uiPath = ctx.config.accountUi?.path;
  const links =
    ctx.config.signInCodes.links && uiPath
      ? new SignInLinks(ctx.config.keys.signInLinks, ctx.config.publicOrigin, uiPath)
      : undefined;
  const code = new CodeStrategy({ ...ctx, links });
  const link = links ? new LinkStrategy(ctx, links) : undefined;
  const AnswerBody = schema.signInCodeAnswerBody(ctx.config);
  const linkRefused = () => new Problem('identity.sign_in_refused');

  app.post(
    '/sign-ins/codes',
    {
      // Every request counts against the route's wider limiter; only a 201 counts against
      // SENDS_A_MESSAGE for the client address and the destination (in the strategy's transaction).
      config: sendingRouteLimit(ctx.config.rateLimits, 'sign-ins/codes'),
      schema: {
        tags: ['sessions'],
        summary: 'Send a one-time sign-in code to a verified address (SIGN_IN_CODES)',
        description:
          'Answers the same 201, in the same time, whether or not the address may sign in by code (unknown, ' +
          'unverified, disabled, or holding a password when SIGN_IN_CODES_WITH_PASSWORD is off): the id is fresh ' +
          'either way and names nothing when no code was sent. The code is sent only to a verified address of an ' +
          'enabled identity, just after the answer; a new code ends the earlier ones. Every 201 counts against ' +
          'RATE_LIMIT_SENDS_A_MESSAGE for the client address and for the destination, known or not; past either, ' +
          '429 rate_limit.exceeded with Retry-After: nothing is sent. 422 identity.identifier_channel_unavailable ' +
          'when SIGN_IN_CODES does not name the channel (a matter of configuration, never of the account).',
        body: schema.SignInCodeBody,
        response: responses(
          { 201: Data(schema.SentSignInCodeSchema) },
          ['identity.identifier_unusable', 'identity.identifier_channel_unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const sent = await code.send(request.body, senderOf(request));
      // The asking browser's binding, for any id (one that names nothing too): see links.ts.
      if (links) reply.header('set-cookie', links.binding(sent.signInCodeId, ctx.config.lifetimes.challenge));
      return reply.code(201).send(envelope(sent));
    },
  );

  app.post(
    '/sign-ins/codes/:id',
    {
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ins/codes/:id'),
      schema: {
        tags: ['sessions'],
        summary: 'Sign in with the code sent by POST /sign-ins/codes',
        description:
          'The body names the address the code was sent to and the code. A code is one factor: 201 with a ' +
          'session, or a second-factor ticket when the identity holds a second factor. Single use, short-lived ' +
          '(CHALLENGE_LIFETIME), five attempts, and only the newest code of the identity counts. Every failure ' +
          '(wrong, spent, expired, replaced or exhausted code, an id of nothing or of another address, a channel ' +
          'SIGN_IN_CODES does not name, a disabled identity) answers the identical 401 identity.sign_in_refused. ' +
          "Every attempt is charged to the address's guess budget (RATE_LIMIT_GUESSES) before the code is looked at: " +
          'past the free failures an early attempt answers 429 rate_limit.exceeded with Retry-After, right or wrong.',
        params: schema.SignInCodeParams,
        body: AnswerBody,
        response: responses(
          {
            201: Data(Type.Union([Type.Ref(SessionGrantSchema), Type.Ref(schema.SecondFactorTicketSchema)])),
          },
          ['identity.sign_in_refused'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const result = await code.signIn(
        { ...request.body, id: request.params.id },
        requestMeta(request),
        complete,
      );
      return reply.code(201).send(envelope(result));
    },
  );

  const linkNote =
    "SIGN_IN_LINKS: the link a sign-in code's message carries, `<ACCOUNT_UI_PATH>#/sign-in/link/<signInCodeId>/<token>`, " +
    'is the same challenge as the code (one use between them; a newer code, expiry and five wrong codes end both). ' +
    "Every failure (a token that is not the id's, a code spent, replaced, expired or exhausted, an identity that " +
    'may no longer sign in by code, SIGN_IN_LINKS off) answers the identical 401 identity.sign_in_refused.';

  app.post(
    '/sign-ins/links/lookups',
    {
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ins/links/lookups'),
      schema: {
        tags: ['sessions'],
        summary: "What a sign-in link's page shows before Continue: the masked address; reads only",
        description:
          'Signs nobody in and changes nothing (a mail scanner that follows the link spends nothing): the page ' +
          'shows "Continue as <maskedIdentifier>", and POST /sign-ins/links is the press of that button. ' +
          '`sameBrowser` is true when the request carries the cookie POST /sign-ins/codes set in the browser that ' +
          `asked for this code. ${linkNote}`,
        body: schema.SignInLinkBody,
        response: responses({ 200: Data(schema.SignInLinkLookupSchema) }, ['identity.sign_in_refused'], {
          body: true,
          rateLimited: true,
        }),
      },
    },
    async (request) => {
      if (!link) throw linkRefused();
      return envelope(await link.lookUp(request.body, request.headers.cookie));
    },
  );

  app.post(
    '/sign-ins/links',
    {
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ins/links'),
      schema: {
        tags: ['sessions'],
        summary: "Sign in with a sign-in code's link (the press of Continue on the link's page)",
        description:
          'Signs in the browser that sends it, as POST /sign-ins/codes/{id} would: a session, or a second-factor ' +
          'ticket when the identity holds a second factor. The browser that asked for the code never receives a ' +
          'session from a link opened elsewhere; GET /sign-ins/codes/{id}/status tells it where the sign-in ' +
          `finished. ${linkNote}`,
        body: schema.SignInLinkBody,
        response: responses(
          {
            201: Data(Type.Union([Type.Ref(SessionGrantSchema), Type.Ref(schema.SecondFactorTicketSchema)])),
          },
          ['identity.sign_in_refused', 'hooks.refused', 'hooks.unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      if (!link) throw linkRefused();
      const result = await link.signIn(request.body, request.headers.cookie, requestMeta(request), complete);
      return reply.code(201).send(envelope(result));
    },
  );

  app.get(
    '/sign-ins/codes/:id/status',
    {
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.answersAChallenge, 'sign-ins/codes/:id/status'),
      schema: {
        tags: ['sessions'],
        summary: 'Where a sign-in code stands, for the browser that asked for it (SIGN_IN_LINKS)',
        description:
          'Answered only with the cookie POST /sign-ins/codes set in the asking browser: `completed` once the ' +
          'code, or its link opened in this browser, signed in (the session cookie is shared by the tabs); ' +
          '`completed_elsewhere` once the link signed in another browser (this one must ask for a new code); ' +
          'otherwise `pending`, also for a code that expired or was replaced (the page keeps its own clock from ' +
          '`codeExpiresAt`) and for an id that names nothing, so the answer tells nobody whether an account holds ' +
          'the address. Without the cookie, or with SIGN_IN_LINKS off: 401 identity.sign_in_refused.',
        params: schema.SignInCodeParams,
        response: responses({ 200: Data(schema.SignInCodeStatusSchema) }, ['identity.sign_in_refused'], {
          rateLimited: true,
        }),
      },
    },
    async (request) => {
      if (!link) throw linkRefused();
      return envelope({ status: await link.status(request.params.id, request.headers.cookie) });
    },
  );
});

/** The second step of a sign-in: no session yet, the ticket is the credential. */
export const secondStepRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { complete } = new SignInCompletion(ctx);
  const secondStep = new SecondStepStrategy(ctx);

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
          [
            'identity.second_factor_refused',
            'identity.sign_in_second_factor_locked',
            'hooks.refused',
            'hooks.unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const grant = await secondStep.signIn(request.body, requestMeta(request), complete);
      return reply.code(201).send(envelope(grant));
    },
  );
});

/**
 * The end of a redirect sign-in (providers/flows/routes.ts starts it and takes the callback): the
 * handoff code, exchanged by the browser that holds the flow's cookie, so refused unless the request
 * comes from the service's own pages (Origin).
 */
export const providerHandoffRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { complete } = new SignInCompletion(ctx);
  const flows = new ProviderFlowService(ctx);
  const redirect = new ProviderRedirectStrategy();
  const { session } = guards(ctx.auth);
  const sameOrigin = sameOriginOnly(ctx.config.publicOrigin);
  for (const shared of [SessionGrantSchema, schema.SecondFactorTicketSchema]) {
    if (!app.getSchema(shared.$id as string)) app.addSchema(shared);
  }

  app.post(
    '/provider-handoffs',
    {
      onRequest: sameOrigin,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'provider-handoffs'),
      // A step-up's handoff is for the session it was started from: the caller's bearer, when sent.
      preHandler: async (request, reply) => {
        if (request.headers.authorization !== undefined) await session(request, reply);
      },
      schema: {
        tags: ['providers'],
        summary: 'Exchange the one-time handoff code of a completed redirect sign-in',
        description:
          'A sign-in answers exactly as POST /sign-ins: a session, or a second-factor ticket when the ' +
          'identity holds a second factor (a provider is one factor). A step-up (sent with the bearer of ' +
          'the session that started it) answers an elevation, or 422 identity.step_up_unavailable when the ' +
          'identity holds a second factor. The code is single use, lives two minutes and counts only with ' +
          'the cookie of the browser that started the flow. Every other failure answers the identical 401 ' +
          `identity.sign_in_refused. ${FLOW_COOKIE_NOTE}`,
        body: providerSchema.ProviderHandoffBody,
        response: responses(
          {
            201: Data(
              Type.Union([
                Type.Ref(SessionGrantSchema),
                Type.Ref(schema.SecondFactorTicketSchema),
                providerSchema.ElevationSchema,
              ]),
            ),
          },
          [
            'identity.cross_site_refused',
            'identity.sign_in_refused',
            'identity.session_required',
            'identity.step_up_unavailable',
            'hooks.refused',
            'hooks.unavailable',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const { result, cookies } = await flows.exchange(
        request.body.code,
        request.headers.cookie,
        request.principal,
      );
      // A step-up's elevation is answered as minted; a sign-in's handoff completes here.
      const answer =
        'elevationToken' in result ? result : await redirect.signIn(result, requestMeta(request), complete);
      reply.header('set-cookie', cookies);
      return reply.code(201).send(envelope(answer));
    },
  );
});

/** The passkey sign-in: registered only when a WebAuthn relying party is configured (config.webauthn). */
export const passkeySignInRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const { complete } = new SignInCompletion(ctx);
  const passkeys = new PasskeyService(ctx);
  const strategy = new PasskeyStrategy(ctx, passkeys);

  app.post(
    '/sign-ins/passkeys/options',
    {
      // No body at all is the usual request (the button on a sign-in page): taken as `{}`.
      config: {
        ...limitFor(ctx.config.rateLimits.provesAPassword, 'sign-ins/passkeys/options'),
        optionalBody: true,
      },
      schema: {
        tags: ['passkeys'],
        summary: 'Request options for a passkey sign-in (navigator.credentials.get), single use, 5 minutes',
        description:
          'No body is needed. An identifier may be sent; the answer is the same whether it exists or has passkeys ' +
          '(allowCredentials is always empty: the authenticator offers this site’s discoverable passkeys).',
        body: Type.Optional(schema.SignInOptionsBody),
        response: responses({ 201: Data(passkeySchema.RequestOptionsSchema) }, [], {
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
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sign-ins/passkeys'),
      schema: {
        tags: ['passkeys'],
        summary: 'Sign in with a passkey: the AuthenticationResponseJSON of navigator.credentials.get',
        description:
          'A passkey with user verification is two factors: a session opens at once, no second-factor ticket. ' +
          'Every failure (unknown or removed credential, bad signature, another origin or RP ID, no user ' +
          'verification, an unknown, expired or spent challenge, a counter that went backwards) answers the ' +
          'identical 401 identity.sign_in_refused.',
        body: passkeySchema.AssertionBody,
        response: responses(
          { 201: Data(schema.PasskeyGrantSchema) },
          ['identity.sign_in_refused', 'hooks.refused', 'hooks.unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          envelope(
            await strategy.signIn(
              request.body.credential as AuthenticationResponseJSON,
              requestMeta(request),
              complete,
            ),
          ),
        ),
  );
});
