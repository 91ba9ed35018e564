import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { guards, principalOf } from '../../../platform/http/auth.js';
import { envelope } from '../../../platform/http/envelope.js';
import { featureRoutes, type RouteApp } from '../../../platform/http/routes.js';
import { Data, responses } from '../../../platform/http/schemas.js';
import { limitFor } from '../../../platform/rate-limit/rate-limit.js';
import { sameOriginOnly } from '../../sessions/browser-session.js';
import * as schema from '../schemas.js';
import { ProviderFlowService } from './service.js';

const FORM_LIMIT = 64 * 1024;
const CALLBACK_NAME = Type.Object(
  { name: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' }) },
  { additionalProperties: false },
);

/** What the routes that set or read the flow's cookie say of their same-origin guard. */
export const FLOW_COOKIE_NOTE =
  'Refused with 403 identity.cross_site_refused unless Origin is the service’s public origin (and ' +
  'Sec-Fetch-Site, when sent, is same-origin).';

/** An onSend hook: the answer is never stored by a cache. */
export async function noStore(_request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  reply.header('cache-control', 'no-store');
  return payload;
}

/**
 * Redirect sign-in through an upstream provider ("Continue with …", docs/providers.md): the list
 * of providers, the start of a flow and the provider's callback (the handoff of the result, a
 * sign-in's completion: sign-in/routes.ts).
 *
 * The start and the handoff set and read a cookie, so they are refused unless the request comes
 * from the service's own pages (Origin), like the browser session's routes. The callback is a
 * top-level navigation from the provider (a GET, or a form POST for form_post providers) and
 * always answers with a redirect back to the hosted pages.
 */
export const providerFlowRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new ProviderFlowService(ctx);
  const { session, elevated, security } = guards(ctx.auth);
  const publicOrigin = ctx.config.publicOrigin;
  const sameOrigin = sameOriginOnly(publicOrigin);
  const cookieNote = FLOW_COOKIE_NOTE;

  app.get(
    '/providers',
    {
      schema: {
        tags: ['providers'],
        summary: 'The providers that offer "Continue with …" (redirect sign-in), in configuration order',
        description:
          'Public. Not paged: the list is the configuration (IDENTITY_PROVIDERS entries with a clientId).',
        response: responses({ 200: Data(Type.Array(schema.ProviderSummarySchema)) }),
      },
    },
    async () => envelope(ctx.upstream.list()),
  );

  app.post(
    '/provider-flows',
    {
      onRequest: sameOrigin,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'provider-flows'),
      // A link needs a session and an elevation, a step-up a session; a sign-in needs neither.
      preHandler: async (request, reply) => {
        const body = request.body as { intent?: string };
        if (body.intent === 'link') for (const guard of elevated) await guard(request, reply);
        else if (body.intent === 'step_up') await session(request, reply);
      },
      schema: {
        tags: ['providers'],
        summary: 'Start a redirect sign-in (or, signed in and elevated, a link) with a provider',
        description:
          'Answers the provider’s authorization URL and sets an HttpOnly cookie that binds the flow (ten ' +
          'minutes, single use) to this browser; the page then navigates to the URL. `returnTo` is one of ' +
          'the hosted pages (sign-in, sign-up, security, devices, or an OpenID Provider interaction). ' +
          '`intent: link` needs a session and an elevation, like POST /sign-in-methods; `intent: step_up` ' +
          'needs a session, and the upstream account must be linked to it. A provider not offering ' +
          `redirect sign-in answers 422 identity.provider_unavailable. ${cookieNote}`,
        security: [{}, ...security.session, ...security.elevated],
        body: schema.ProviderFlowBody,
        response: responses(
          { 201: Data(schema.ProviderFlowSchema) },
          [
            'identity.cross_site_refused',
            'identity.provider_unavailable',
            'identity.session_required',
            'identity.elevation_required',
          ],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const body = request.body;
      const principal = body.intent === 'sign_in' ? undefined : principalOf(request);
      const started = await service.start(body, principal);
      reply.header('set-cookie', started.cookie);
      return reply
        .code(201)
        .send(envelope({ authorizationUrl: started.authorizationUrl, expiresAt: started.expiresAt }));
    },
  );

  // The callback takes the provider's form POST (form_post): only here, in its own scope, is a
  // form body parsed, so no other route accepts one.
  await app.register(async (scope: RouteApp) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_LIMIT },
      (_request, body, done) => done(null, body),
    );
    const callback = async (request: FastifyRequest, reply: FastifyReply) => {
      const { name } = request.params as { name: string };
      const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
      const url = `${publicOrigin}${request.url.split('?')[0]}`;
      let upstreamRequest: Request;
      let params: URLSearchParams;
      if (request.method === 'POST') {
        const form = typeof request.body === 'string' ? request.body : '';
        params = new URLSearchParams(form);
        upstreamRequest = new Request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form,
        });
      } else {
        params = new URLSearchParams(query);
        upstreamRequest = new Request(query ? `${url}?${query}` : url);
      }
      const result = await service.callback(name, upstreamRequest, params, request.headers.cookie);
      if (result.cookies.length > 0) reply.header('set-cookie', result.cookies);
      return reply
        .code(303)
        .headers({ location: result.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
        .send();
    };
    const callbackSchema = {
      tags: ['providers'],
      params: CALLBACK_NAME,
      response: { 303: { description: 'Back to the hosted page the flow started from' } },
    };
    scope.get(
      '/providers/:name/callback',
      {
        config: limitFor(ctx.config.rateLimits.provesAPassword, 'provider-callbacks'),
        schema: {
          ...callbackSchema,
          summary: 'The provider’s redirect back (register this URL as the redirect URI)',
          description:
            'Always 303 See Other to the hosted page the flow started from, with `provider` and either ' +
            '`handoff` (exchange it with POST /provider-handoffs), `result=linked`, or `error` (cancelled, ' +
            'unavailable, refused, account_exists, sign_up_closed, already_linked, hook_refused) in its query.',
        },
      },
      callback,
    );
    scope.post(
      '/providers/:name/callback',
      {
        config: limitFor(ctx.config.rateLimits.provesAPassword, 'provider-callbacks'),
        schema: {
          ...callbackSchema,
          summary: 'The provider’s form_post answer (Apple): as the GET',
        },
      },
      callback,
    );
  });
});
