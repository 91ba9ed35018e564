import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DEVICE_CODE_GRANT } from '../../config.js';
import type { AppContext } from '../../context.js';
import { installPrune } from '../../platform/db/prune.js';
import { Problem } from '../../platform/problem.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { errorPage } from './error-page.js';
import { acceptedLanguages, deviceLimitPage, pageLocale, signInLimitPage } from './pages.js';
import { END_SESSION_PARAMS, OIDC_PATHS, overCap, type PrefetchedTokens, SILENT_PARAM } from './provider.js';

const BODY_LIMIT = 64 * 1024;
const hide = { schema: { hide: true } } as const;

interface PresentedCredentials {
  clientId: string;
  secret: string;
  /** How they came: the registered method must match (OidcService.verifyClientSecret). */
  method: 'client_secret_basic' | 'client_secret_post';
}

/** Client credentials from `Authorization: Basic` (form-encoded inside, RFC 6749 2.3.1) or the body. */
function presentedCredentials(request: FastifyRequest): PresentedCredentials | undefined {
  const header = request.headers.authorization;
  if (header?.toLowerCase().startsWith('basic ')) {
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return undefined;
    try {
      return {
        clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
        secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
        method: 'client_secret_basic',
      };
    } catch {
      return undefined;
    }
  }
  if (
    typeof request.body === 'string' &&
    request.headers['content-type']?.startsWith('application/x-www-form-urlencoded')
  ) {
    const form = new URLSearchParams(request.body);
    const clientId = form.get('client_id');
    const secret = form.get('client_secret');
    if (clientId && secret) return { clientId, secret, method: 'client_secret_post' };
  }
  return undefined;
}

/** The browser endpoints: limited per address, a page for their refusals, POST taken as GET. */
const BROWSER_ENDPOINTS = new Set<string>([OIDC_PATHS.authorization, OIDC_PATHS.endSession]);

/**
 * The token a client-authenticated request presents for the library to look up: introspection's
 * `token`, the refresh grant's `refresh_token` (a form, as the protocol sends them). Looked up with
 * the client's guess budget in one statement (OidcService.verifyClientSecret).
 */
function presentedToken(request: FastifyRequest, path: string): string | undefined {
  if (typeof request.body !== 'string' || !isForm(request)) return undefined;
  if (path !== '/oidc/token/introspection' && path !== '/oidc/token') return undefined;
  const form = new URLSearchParams(request.body);
  const value =
    path === '/oidc/token'
      ? form.get('grant_type') === 'refresh_token'
        ? form.get('refresh_token')
        : null
      : form.get('token');
  // Only what could be an opaque token's id (the library's values are base64url): anything else
  // the library refuses or reads another way, and its own find reads it then.
  return value && /^[\w-]{16,256}$/.test(value) ? value : undefined;
}

const isForm = (request: FastifyRequest) =>
  request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') ?? false;

/** An HTML answer a person reads (the provider's error page): never cached, never framed. */
function pageReply(reply: FastifyReply, status: number, html: string) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .headers({
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      'content-security-policy': "frame-ancestors 'none'",
    })
    .send(html);
}

/**
 * The OpenID Provider on this origin (docs/oidc.md): discovery at the origin, the protocol's
 * endpoints under /oidc handed to oidc-provider as they are, and the interaction routes that make
 * the hosted pages its sign-in. Hidden from the OpenAPI document: discovery describes them.
 */
export async function oidcRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const oidc = ctx.oidc;
  const uiPath = ctx.config.accountUi?.path ?? '/account/';

  /** The bridge's own refusal of a browser request (invalid_request), as the provider's error page. */
  function refusal(request: FastifyRequest, signOut: boolean, description: string): string {
    const query = (request.query ?? {}) as Record<string, unknown>;
    return errorPage({
      lang: pageLocale(query.ui_locales, acceptedLanguages(request.headers['accept-language'])),
      error: 'invalid_request',
      description,
      signOut,
      brand: ctx.config.brand,
      ...(ctx.config.accountUi
        ? { accountUrl: `${ctx.config.publicOrigin}${ctx.config.accountUi.path}` }
        : {}),
    });
  }

  // The provider reads its own bodies: they arrive here as text and are handed over untouched.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ['application/x-www-form-urlencoded', 'application/json'],
    { parseAs: 'string', bodyLimit: BODY_LIMIT },
    (_request, body, done) => done(null, body),
  );

  async function forward(request: FastifyRequest, reply: FastifyReply, url?: string) {
    let verified: { clientId: string; secret: string } | undefined;
    let prefetched: PrefetchedTokens | undefined;
    const path = request.url.split('?')[0];
    if ((OIDC_PATHS.clientAuthenticated as readonly string[]).includes(path)) {
      const presented = presentedCredentials(request);
      if (presented) {
        try {
          const { secret, tokens } = await oidc.verifyClientSecret(
            presented.clientId,
            presented.secret,
            presented.method,
            presentedToken(request, path),
          );
          if (secret) verified = { clientId: presented.clientId, secret };
          prefetched = tokens;
        } catch (error) {
          if (error instanceof Problem && error.status === 429) {
            // The client's guess budget: the protocol's error, with the wait.
            return reply
              .code(429)
              .headers({ ...error.extra.headers, 'cache-control': 'no-store' })
              .send({ error: 'invalid_client', error_description: 'too many failed client authentications' });
          }
          throw error;
        }
      }
    }
    if (request.url.split('?')[0] === '/oidc/token' && typeof request.body === 'string' && isForm(request)) {
      const form = new URLSearchParams(request.body);
      const deviceCode = form.get('device_code');
      if (
        form.get('grant_type') === DEVICE_CODE_GRANT &&
        deviceCode &&
        !dpopProofAwaitsNonce(request.headers.dpop) &&
        !(await oidc.devicePollAllowed(deviceCode))
      ) {
        return reply.code(400).headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({
          error: 'slow_down',
          error_description: 'polling too quickly: wait 5 more seconds between polls',
        });
      }
    }
    if (typeof request.body === 'string') (request.raw as { body?: string }).body = request.body;
    if (url) request.raw.url = url;
    reply.hijack();
    await oidc.provider.handle(request.raw, reply.raw, verified, prefetched);
  }

  /**
   * A POST to a browser endpoint (OIDC Core 3.1.2.1, RP-Initiated Logout 1.0 section 2) is sent
   * back as the same request by GET: a 303 to the same path with the form as the query. The
   * browser then arrives with its SameSite=Lax cookies, which a cross-site POST does not carry, so
   * the library sees exactly what a GET gives it (docs/decisions.md, "POST to the authorization and
   * end-session endpoints"). The form is parsed and encoded again, never copied into the header.
   */
  function asGet(request: FastifyRequest, reply: FastifyReply) {
    // The route's own path, not the request's spelling of it (which may be percent-encoded).
    const path = request.routeOptions.url ?? OIDC_PATHS.authorization;
    if (typeof request.body !== 'string' || !isForm(request)) {
      return pageReply(
        reply,
        400,
        refusal(
          request,
          path === OIDC_PATHS.endSession,
          'The request must be a form (application/x-www-form-urlencoded).',
        ),
      );
    }
    const query = new URLSearchParams(request.body).toString();
    return reply.header('cache-control', 'no-store').redirect(query ? `${path}?${query}` : path, 303);
  }

  /**
   * `prompt=none` from a browser signed in at the hosted pages: the provider's own session may not
   * exist yet, so the request goes on as a silent interaction, which logs in from the hosted
   * session or answers login_required / consent_required, never a page. Without a hosted session
   * it stays as it is and the provider answers login_required.
   */
  async function authorize(request: FastifyRequest, reply: FastifyReply) {
    if (request.method === 'POST') return asGet(request, reply);
    const [path, query = ''] = request.url.split('?');
    const form = new URLSearchParams(query);
    if (
      form.get('prompt') === 'none' &&
      !form.has(SILENT_PARAM) &&
      (await oidc.hostedSession(request.headers.cookie))
    ) {
      form.delete('prompt');
      form.set(SILENT_PARAM, '1');
      return forward(request, reply, `${path}?${form.toString()}`);
    }
    return forward(request, reply);
  }

  /**
   * The library keeps an end-session request's `state` and `ui_locales` in its session, even for a
   * browser it does not know, and has no hook to check them first: the caps are checked here
   * (docs/oidc.md, "Limits"). The answer is a page, as the library's own refusals there are: the
   * post_logout_redirect_uri is not yet checked, so nothing may be redirected to it.
   */
  function endSession(request: FastifyRequest, reply: FastifyReply) {
    if (request.method === 'POST') return asGet(request, reply);
    const query = new URLSearchParams(request.url.split('?')[1] ?? '');
    const named = new Set<string>(END_SESSION_PARAMS);
    const over = overCap([...query].filter(([name]) => named.has(name)));
    if (over) {
      return pageReply(reply, 400, refusal(request, true, over));
    }
    return forward(request, reply);
  }

  // The browser endpoints' refusals by the per-address limit are a page for the person in the
  // browser, in the provider's style, not Problem Details: nothing else there answers JSON, and the
  // app cannot be redirected to before its redirect_uri is checked. Everything else goes on to the
  // service's own handler.
  app.setErrorHandler((error, request, reply) => {
    if (
      error instanceof Problem &&
      error.code === 'rate_limit.exceeded' &&
      request.routeOptions.url === OIDC_PATHS.codeVerification
    ) {
      if (error.extra.headers) reply.headers(error.extra.headers);
      const lang = pageLocale(undefined, acceptedLanguages(request.headers['accept-language']));
      return pageReply(reply, 429, deviceLimitPage(lang, String(reply.getHeader('retry-after') ?? '60')));
    }
    if (
      error instanceof Problem &&
      error.code === 'rate_limit.exceeded' &&
      BROWSER_ENDPOINTS.has(request.routeOptions.url ?? '')
    ) {
      if (error.extra.headers) reply.headers(error.extra.headers);
      const lang = pageLocale(
        request.query && (request.query as Record<string, unknown>).ui_locales,
        acceptedLanguages(request.headers['accept-language']),
      );
      return pageReply(reply, 429, signInLimitPage(lang, String(reply.getHeader('retry-after') ?? '60')));
    }
    throw error;
  });

  const endpoint = { ...hide, bodyLimit: BODY_LIMIT };
  const limited = {
    ...endpoint,
    config: limitFor(ctx.config.rateLimits.oidcClients, 'oidc/client-authentication'),
  };
  for (const path of OIDC_PATHS.clientAuthenticated) {
    app.route({ method: ['POST', 'OPTIONS'], url: path, ...limited, handler: (q, r) => forward(q, r) });
  }
  // Every request here stores something for an hour or more (an interaction; a session), so each
  // endpoint is limited per address, a POST counted like a GET (docs/oidc.md, "Limits"). HEAD is
  // declared on the same route: the library answers it as a GET, and Fastify's own HEAD route
  // would be counted apart.
  const { oidcAuthorizations } = ctx.config.rateLimits;
  const browser = { ...endpoint, method: ['GET', 'HEAD', 'POST'], exposeHeadRoute: false };
  app.route({
    ...browser,
    url: OIDC_PATHS.authorization,
    config: limitFor(oidcAuthorizations, 'oidc/authorization'),
    handler: authorize,
  });
  app.route({
    ...browser,
    url: OIDC_PATHS.endSession,
    config: limitFor(oidcAuthorizations, 'oidc/end-session'),
    handler: endSession,
  });
  // The verification page's POSTs are where user codes are guessed: each one (a typed code, a
  // confirmation, a cancel) counts against the per-address limit of code-answering routes, which
  // is the bound docs/oidc.md ("Device authorization grant") works out. Its GETs go on below.
  app.route({
    ...endpoint,
    method: 'POST',
    url: OIDC_PATHS.codeVerification,
    config: limitFor(ctx.config.rateLimits.answersAChallenge, 'oidc/device-verification'),
    handler: (q, r) => forward(q, r),
  });
  app.route({
    method: ['GET', 'POST', 'OPTIONS'],
    url: '/oidc/*',
    ...endpoint,
    handler: (q, r) => forward(q, r),
  });
  app.route({
    method: ['GET', 'OPTIONS'],
    url: OIDC_PATHS.discovery,
    ...endpoint,
    handler: (q, r) => forward(q, r),
  });
  // RFC 8414 metadata: the same document, at the name OAuth clients look for.
  app.route({
    method: ['GET', 'OPTIONS'],
    url: OIDC_PATHS.authorizationServer,
    ...endpoint,
    handler: (q, r) => forward(q, r, OIDC_PATHS.discovery),
  });

  /** An interaction the browser no longer holds (expired, another browser): a page, never a redirect. */
  function interactionGone(reply: FastifyReply) {
    return reply
      .code(400)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in expired</title></head><body><main><h1>This sign-in has expired</h1><p>Go back to the app and start again.</p></main></body></html>',
      );
  }

  const step = async (request: FastifyRequest, reply: FastifyReply) => {
    let next: Awaited<ReturnType<typeof oidc.interactions.nextStep>>;
    try {
      next = await oidc.interactions.nextStep(request.raw, reply.raw, uiPath);
    } catch {
      return interactionGone(reply);
    }
    // A routed request's SSO flow (docs/oidc.md, "Enterprise sign-in"): its cookie binds it here.
    if (next.kind === 'redirect' && next.cookie) reply.header('set-cookie', next.cookie);
    return reply.header('cache-control', 'no-store').redirect(next.to, 303);
  };
  app.get(`${OIDC_PATHS.interaction}/:uid`, hide, step);
  app.get(`${OIDC_PATHS.interaction}/:uid/continue`, hide, step);

  app.get(`${OIDC_PATHS.interaction}/:uid/details`, hide, async (request, reply) => {
    try {
      const described = await oidc.interactions.describe(request.raw, reply.raw);
      return reply.header('cache-control', 'no-store').send(described);
    } catch {
      throw new Problem('oidc.interaction_expired');
    }
  });

  app.post(`${OIDC_PATHS.interaction}/:uid/consent`, hide, async (request, reply) => {
    // The consent is the browser's own: a cross-site page cannot post it (CSRF).
    if (request.headers.origin !== ctx.config.publicOrigin) throw new Problem('identity.cross_site_refused');
    let decision: unknown;
    try {
      decision = (JSON.parse(String(request.body ?? '')) as { decision?: unknown }).decision;
    } catch {
      decision = undefined;
    }
    if (decision !== 'allow' && decision !== 'deny') {
      throw new Problem('validation.failed', {
        errors: [{ location: 'body', field: 'decision', code: 'enum', message: 'must be "allow" or "deny"' }],
      });
    }
    try {
      const redirectTo = await oidc.interactions.decide(request.raw, reply.raw, decision === 'allow');
      return reply.header('cache-control', 'no-store').send({ redirectTo });
    } catch {
      throw new Problem('oidc.interaction_expired');
    }
  });

  // Ends grants whose session ended (and sends their back-channel logouts) on every instance;
  // refusal on use does not wait for it (docs/oidc.md, "One revocation").
  installPrune(app, {
    everySeconds: ctx.config.oidc.sweepSeconds,
    atStart: false,
    run: () => oidc.sweep(),
    failed: (error) => ctx.log.error({ err: error }, 'oidc sweep failed'),
  });
}

/**
 * Whether a token request carries a DPoP proof without a server nonce. The provider requires one in
 * every proof and answers such a request use_dpop_nonce (RFC 9449 §8) before it reads the device
 * code, so it is not a poll: the device's retry at once with the nonce must not be slow_down. A
 * proof with a nonce, or anything unreadable, counts as a poll as before.
 */
function dpopProofAwaitsNonce(header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const payload = header.split('.')[1];
  if (!payload) return false;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return typeof claims === 'object' && claims !== null && !('nonce' in claims);
  } catch {
    return false;
  }
}
