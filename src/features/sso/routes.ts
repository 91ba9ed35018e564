import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { guards, principalOf, requestMeta } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes, type RouteApp } from '../../platform/http/routes.js';
import { Data, IdInput, Instant, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { ConnectionService } from '../organizations/connections/service.js';
import { PERMISSION_REFUSALS } from '../organizations/schemas.js';
import { FLOW_COOKIE_NOTE, noStore } from '../providers/flows/routes.js';
import { sameOriginOnly } from '../sessions/browser-session.js';
import { SessionGrantSchema } from '../sessions/schemas.js';
import { SignInCompletion } from '../sign-in/complete.js';
import { SecondFactorTicketSchema } from '../sign-in/schemas.js';
import { SsoStrategy } from '../sign-in/strategies/sso.js';
import { ssoRequirementRoutes } from './requirement/routes.js';
import { TestResultSchema } from './schemas.js';
import { SsoService } from './service.js';

const TAGS = ['sso'];
const FORM_LIMIT = 600 * 1024;
const Params = Type.Object({ connectionId: IdInput }, { additionalProperties: false });
const TestParams = Type.Object(
  { organizationId: IdInput, connectionId: IdInput },
  { additionalProperties: false },
);
const StartedSchema = Type.Object(
  { redirectUrl: Type.String({ format: 'uri' }), expiresAt: Instant },
  { additionalProperties: false },
);

/**
 * Enterprise sign-in by SAML 2.0 (docs/sso.md): our SP metadata per connection, the start of a
 * flow (HTTP-Redirect AuthnRequest), the ACS (HTTP-POST) and the handoff that completes the sign-in.
 */
export const ssoRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new SsoService(ctx);
  const connections = new ConnectionService(ctx);
  const { session, security } = guards(ctx.auth);
  const { complete } = new SignInCompletion(ctx);
  const strategy = new SsoStrategy();
  const sameOrigin = sameOriginOnly(ctx.config.publicOrigin);
  ssoRequirementRoutes(app, ctx);
  for (const shared of [SessionGrantSchema, SecondFactorTicketSchema]) {
    if (!app.getSchema(shared.$id as string)) app.addSchema(shared);
  }

  app.get(
    '/sso/saml/:connectionId',
    {
      schema: {
        tags: TAGS,
        summary: 'Our SAML SP metadata for a connection (its URL is also our entity id)',
        description:
          'Public: the XML document an IdP imports (entity id, ACS, our encryption certificate if any).',
        params: Params,
        response: {
          200: { description: 'SAML 2.0 metadata (application/samlmetadata+xml)', type: 'string' },
          ...responses({}, ['organization.connection_not_found']),
        },
      },
    },
    async (request, reply) => {
      const xml = await service.metadata(request.params.connectionId);
      return reply.type('application/samlmetadata+xml; charset=utf-8').send(xml);
    },
  );

  app.post(
    '/sso/saml/:connectionId/flows',
    {
      onRequest: sameOrigin,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-flows'),
      schema: {
        tags: TAGS,
        summary: 'Start a SAML sign-in: the IdP URL carrying our AuthnRequest (HTTP-Redirect)',
        description:
          'Sets an HttpOnly cookie (SameSite=None: the IdP answers by a cross-site POST) that binds the ' +
          'AuthnRequest, ten minutes and single use, to this browser; the page navigates to `redirectUrl`. ' +
          '`returnTo` is the hosted sign-in or an OpenID Provider interaction. A disabled or unknown ' +
          `connection: 404 organization.connection_not_found. ${FLOW_COOKIE_NOTE}`,
        params: Params,
        body: Type.Object(
          { returnTo: Type.String({ minLength: 1, maxLength: 300 }) },
          { additionalProperties: false },
        ),
        response: responses(
          {
            201: Data(StartedSchema),
          },
          ['identity.cross_site_refused', 'organization.connection_not_found'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const started = await service.start(request.params.connectionId, request.body.returnTo);
      reply.header('set-cookie', started.cookie);
      return reply
        .code(201)
        .send(envelope({ redirectUrl: started.redirectUrl, expiresAt: started.expiresAt }));
    },
  );

  app.post(
    '/sign-ins/sso',
    {
      onRequest: sameOrigin,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-discovery'),
      schema: {
        tags: TAGS,
        summary: 'Start enterprise sign-in by email address or organization (home-realm discovery)',
        description:
          'Exactly one of `email` (its domain verified by an organization with an enabled SAML ' +
          'connection) or `organization` (its id or slug). Answers as POST /sso/saml/{connectionId}/flows ' +
          '(the IdP URL and the flow’s cookie). No enabled connection for it, whatever the reason: 422 ' +
          'identity.sso_unavailable, the same whether or not anyone holds the address. ' +
          FLOW_COOKIE_NOTE,
        body: Type.Union([
          Type.Object(
            {
              email: Type.String({ minLength: 3, maxLength: 320 }),
              returnTo: Type.String({ minLength: 1, maxLength: 300 }),
            },
            { additionalProperties: false },
          ),
          Type.Object(
            {
              organization: Type.String({
                minLength: 1,
                maxLength: 100,
                description: 'the organization’s id or slug',
              }),
              returnTo: Type.String({ minLength: 1, maxLength: 300 }),
            },
            { additionalProperties: false },
          ),
        ]),
        response: responses(
          { 201: Data(StartedSchema) },
          ['identity.cross_site_refused', 'identity.sso_unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const started = await service.startFor(request.body);
      reply.header('set-cookie', started.cookie);
      return reply
        .code(201)
        .send(envelope({ redirectUrl: started.redirectUrl, expiresAt: started.expiresAt }));
    },
  );

  app.get(
    '/sso/oidc/:connectionId/callback',
    {
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-oidc-callback'),
      schema: {
        tags: TAGS,
        summary: 'Our redirect URI for an OpenID connection: give this URL to the IdP',
        description:
          'Always 303 See Other to the hosted page, as the SAML ACS: with `handoff` when the `state` names ' +
          'a flow started in this browser and the code exchange and ID token passed every check (PKCE, ' +
          'nonce, signature, issuer, audience, times) and the linking rules; with `error=not_allowed` ' +
          'when the email is outside the verified domains (or the IdP says it is unverified); else ' +
          '`error=refused`, byte for byte the same whatever failed. A test flow returns to the test page ' +
          'with `result` instead.',
        params: Params,
        response: { 303: { description: 'Back to the hosted page' } },
      },
    },
    async (request, reply) => {
      const at = request.url.indexOf('?');
      const query = new URLSearchParams(at < 0 ? '' : request.url.slice(at + 1));
      const location = await service.oidcCallback(request.params.connectionId, query, request.headers.cookie);
      return reply
        .code(303)
        .headers({ location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
        .send();
    },
  );

  app.post(
    '/organizations/:organizationId/connections/:connectionId/tests',
    {
      onRequest: sameOrigin,
      preHandler: session,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-tests'),
      schema: {
        tags: TAGS,
        summary: 'Test a connection: run its flow once without signing anyone in (connections:manage)',
        description:
          'Enabled or not, the connection’s flow (SAML AuthnRequest or OpenID authorization request) is ' +
          'started as for a sign-in and its cookie set; the IdP’s answer returns the browser to the hosted ' +
          'test page with `result`, which POST /sso-tests/results reads for this session in this browser ' +
          'only. Nothing is signed in, created, linked or joined (docs/sso.md, "Testing a connection"). ' +
          `An OpenID issuer whose discovery fails: 503 identity.sso_idp_unavailable. ${FLOW_COOKIE_NOTE}`,
        security: security.session,
        params: TestParams,
        response: responses(
          { 201: Data(StartedSchema) },
          [
            ...PERMISSION_REFUSALS,
            'identity.cross_site_refused',
            'organization.connection_not_found',
            'identity.sso_idp_unavailable',
          ],
          { rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const { organizationId, connectionId } = request.params;
      const { identityId, sessionId } = principalOf(request);
      await connections.get({ kind: 'member', identityId }, organizationId, connectionId);
      const started = await service.startTest(organizationId, connectionId, sessionId);
      reply.header('set-cookie', started.cookie);
      return reply
        .code(201)
        .send(envelope({ redirectUrl: started.redirectUrl, expiresAt: started.expiresAt }));
    },
  );

  app.get(
    '/sso-test-starts/:token',
    {
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-test-starts'),
      schema: {
        tags: TAGS,
        summary: 'Open an operator’s connection test in this browser (the start URL the admin API gave)',
        description:
          'Single use: spends the token, binds the test flow to this browser (the flow’s HttpOnly cookie, ' +
          'SameSite=None) and answers 303 to the IdP. A spent, expired or unknown token: 303 to the ' +
          'hosted page that says so, nothing set. Nobody is signed in (docs/sso.md, "Testing a connection").',
        params: Type.Object(
          { token: Type.String({ minLength: 1, maxLength: 128 }) },
          { additionalProperties: false },
        ),
        response: { 303: { description: 'To the IdP, or to the hosted page when the link is spent' } },
      },
    },
    async (request, reply) => {
      const opened = await service.openOperatorTest(request.params.token);
      if (opened.cookie) reply.header('set-cookie', opened.cookie);
      return reply
        .code(303)
        .headers({ location: opened.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
        .send();
    },
  );

  app.post(
    '/sso-tests/results',
    {
      onRequest: sameOrigin,
      preHandler: session,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-tests'),
      schema: {
        tags: TAGS,
        summary: 'The result of a connection test: what the IdP sent and which checks passed',
        description:
          'Only for the session that started the test, with the test flow’s cookie, for ten minutes; ' +
          'readable more than once. Anything else: the identical 404 organization.connection_test_not_found.',
        security: security.session,
        body: Type.Object(
          { code: Type.String({ minLength: 1, maxLength: 128 }) },
          { additionalProperties: false },
        ),
        response: responses(
          { 200: Data(TestResultSchema) },
          ['identity.cross_site_refused', 'organization.connection_test_not_found'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request) => {
      const { sessionId } = principalOf(request);
      return envelope(await service.testResult(request.body.code, sessionId, request.headers.cookie));
    },
  );

  // The ACS takes the IdP's form POST: only here, in its own scope, is a form body parsed.
  await app.register(async (scope: RouteApp) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_LIMIT },
      (_request, body, done) => done(null, body),
    );
    scope.post(
      '/sso/saml/:connectionId/acs',
      {
        config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-acs'),
        schema: {
          tags: TAGS,
          summary: 'Our Assertion Consumer Service (HTTP-POST binding): give this URL to the IdP',
          description:
            'Always 303 See Other to the hosted page: with `handoff` (exchange it with POST /sso-handoffs) ' +
            'when the response passed every check (docs/sso.md, "Checks") and the linking rules; with ' +
            '`error=not_allowed` when the assertion was good but its email is not in a domain the ' +
            'organization verified (nothing is created); with `error=hook_refused` or `error=unavailable` ' +
            'when a new identity (JIT) was refused by the before_identity_created hook or the hook failed ' +
            '(nothing is created); else with `error=refused`, the same answer byte ' +
            'for byte whatever failed.',
          params: Params,
          response: { 303: { description: 'Back to the hosted page' } },
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const { connectionId } = request.params as { connectionId: string };
        const form = new URLSearchParams(typeof request.body === 'string' ? request.body : '');
        const location = await service.acs(
          connectionId,
          form.get('SAMLResponse') ?? undefined,
          request.headers.cookie,
        );
        return reply
          .code(303)
          .headers({ location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
          .send();
      },
    );
  });

  app.post(
    '/sso-handoffs/previews',
    {
      onRequest: sameOrigin,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-handoffs'),
      schema: {
        tags: TAGS,
        summary: 'Which organization and connection a handoff code signs into, without spending it',
        description:
          'For the page that asks the person to continue an IdP-initiated sign-in (no login CSRF): it ' +
          'names the organization and the connection before anything is signed in. The code stays ' +
          'usable; a code bound to a flow counts only with that flow’s cookie. Every failure answers ' +
          'the identical 401 identity.sign_in_refused.',
        body: Type.Object(
          { code: Type.String({ minLength: 1, maxLength: 128 }) },
          { additionalProperties: false },
        ),
        response: responses(
          {
            200: Data(
              Type.Object(
                {
                  organization: Type.Object(
                    { id: Type.String({ format: 'uuid' }), name: Type.String() },
                    { additionalProperties: false },
                  ),
                  connection: Type.Object({ name: Type.String() }, { additionalProperties: false }),
                },
                { additionalProperties: false },
              ),
            ),
          },
          ['identity.cross_site_refused', 'identity.sign_in_refused'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request) => envelope(await service.preview(request.body.code, request.headers.cookie)),
  );

  app.post(
    '/sso-handoffs',
    {
      onRequest: sameOrigin,
      onSend: noStore,
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-handoffs'),
      schema: {
        tags: TAGS,
        summary: 'Exchange the one-time handoff code of a completed SAML sign-in',
        description:
          'Answers exactly as POST /sign-ins: a session, or a second-factor ticket when the identity holds ' +
          'a second factor (an IdP is one factor). The code is single use, lives two minutes and counts ' +
          'only with the cookie of the browser that started the flow (an IdP-initiated sign-in has no ' +
          'cookie: its page asked the person to continue). Every other failure answers the identical 401 ' +
          `identity.sign_in_refused. ${FLOW_COOKIE_NOTE}`,
        body: Type.Object(
          { code: Type.String({ minLength: 1, maxLength: 128 }) },
          { additionalProperties: false },
        ),
        response: responses(
          { 201: Data(Type.Union([Type.Ref(SessionGrantSchema), Type.Ref(SecondFactorTicketSchema)])) },
          ['identity.cross_site_refused', 'identity.sign_in_refused', 'hooks.refused', 'hooks.unavailable'],
          { body: true, rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const { handoff, cookies } = await service.exchange(request.body.code, request.headers.cookie);
      const answer = await strategy.signIn(handoff, requestMeta(request), complete);
      if (cookies.length > 0) reply.header('set-cookie', cookies);
      return reply.code(201).send(envelope(answer));
    },
  );
});
