import { createHash, randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import { Cookies } from '../../platform/http/cookies.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import { Problem } from '../../platform/problem.js';
import { CONSOLE_CALLBACK_PATH, CONSOLE_CLIENT_ID } from '../oidc/console-client.js';
import type { OperatorService } from './service.js';

/** The console's paths on the admin listener, outside /admin/v1 and open without a key. */
export const CONSOLE_PREFIX = '/console';

/** A console path of a request URL (its query left out). */
export function isConsolePath(url: string): boolean {
  const path = url.split('?')[0];
  return path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`);
}

/** Seconds the browser has to come back from the provider with the code. */
const FLOW_TTL = 600;
const FLOW_AAD = 'console-flow';
const SESSION_AAD = 'console-session';

/** The token endpoint's answer, as the console reads it. */
export interface TokenAnswer {
  status: number;
  accessToken?: string;
  expiresIn?: number;
}

/** The two calls the console makes to the OpenID Provider, as the `console` client. */
export interface ConsoleProviderCalls {
  /** POST /oidc/token with this form. */
  token(form: Record<string, string>): Promise<TokenAnswer>;
  /** POST /oidc/token/revocation of this access token. */
  revoke(token: string): Promise<void>;
}

export interface ConsoleRouteOptions {
  config: Pick<Config, 'admin' | 'publicOrigin'>;
  clock: Clock;
  sealer: Sealer;
  operators: OperatorService;
  /** The provider's endpoints, called in process (the public app's own routes). */
  provider: ConsoleProviderCalls;
}

interface Flow {
  state: string;
  verifier: string;
  /** Epoch seconds. */
  exp: number;
}

interface ConsoleSession {
  token: string;
  /** Epoch seconds of the last request to /console/session. */
  seen: number;
  /** Epoch seconds: the access token's end. */
  exp: number;
}

/**
 * The console's sign-in and its session (docs/admin.md, "The console's session"). The operator
 * signs in at the service's own OpenID Provider as the built-in client `console` (authorization
 * code, PKCE S256); the code is exchanged here, in process, and the access token kept in an
 * HttpOnly cookie of the admin origin, sealed (AES-GCM) with the time of its last use. The page's
 * script asks POST /console/session for it (same origin only, as the account pages ask for theirs)
 * and calls /admin/v1 with it as a bearer token: the admin API itself never reads a cookie, so no
 * other site can make a browser act there. The session ends after CONSOLE_IDLE_TIMEOUT without a
 * request, when the access token expires, or as soon as the operator's account session ends.
 */
export const consoleRoutes = featureRoutes(async (app, opts: ConsoleRouteOptions) => {
  const { config, clock, sealer, operators } = opts;
  const origin = config.admin.console.origin;
  const cookies = new Cookies(origin);
  const flowCookie = cookies.name('console-flow');
  const sessionCookie = cookies.name('console-session');
  const now = () => Math.floor(clock.now().getTime() / 1000);
  const read = <T>(request: FastifyRequest, name: string, aad: string): T | undefined => {
    const pair = cookies.parse(request.headers.cookie).find((c) => c.name === name);
    if (!pair) return undefined;
    try {
      return JSON.parse(sealer.open(pair.value, aad)) as T;
    } catch {
      return undefined;
    }
  };
  const clearSession = cookies.clearing(sessionCookie);
  const sameOrigin = async (request: FastifyRequest) => {
    const site = request.headers['sec-fetch-site'];
    if (request.headers.origin !== origin || (site !== undefined && site !== 'same-origin'))
      throw new Problem('identity.cross_site_refused');
  };
  const ended = () => new Problem('admin.console_session_ended', { headers: { 'set-cookie': clearSession } });

  app.get(
    `${CONSOLE_PREFIX}/sign-in`,
    {
      schema: {
        hide: true,
        // fresh=1: the provider asks for the sign-in again (an erasure's step-up, docs/admin.md).
        querystring: Type.Object(
          { fresh: Type.Optional(Type.Literal('1')) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const flow: Flow = {
        state: randomBytes(32).toString('base64url'),
        verifier: randomBytes(32).toString('base64url'),
        exp: now() + FLOW_TTL,
      };
      const challenge = createHash('sha256').update(flow.verifier).digest('base64url');
      const url = new URL('/oidc/auth', config.publicOrigin);
      url.search = new URLSearchParams({
        client_id: CONSOLE_CLIENT_ID,
        redirect_uri: `${origin}${CONSOLE_CALLBACK_PATH}`,
        response_type: 'code',
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: flow.state,
        ...(request.query.fresh ? { prompt: 'login', max_age: '0' } : {}),
      }).toString();
      reply.header(
        'set-cookie',
        cookies.serialize(flowCookie, sealer.seal(JSON.stringify(flow), FLOW_AAD), FLOW_TTL),
      );
      return reply.code(303).header('location', url.href).send();
    },
  );

  app.get(
    CONSOLE_CALLBACK_PATH,
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          {
            code: Type.Optional(Type.String({ maxLength: 512 })),
            state: Type.Optional(Type.String({ maxLength: 512 })),
            error: Type.Optional(Type.String({ maxLength: 512 })),
            error_description: Type.Optional(Type.String({ maxLength: 2048 })),
            iss: Type.Optional(Type.String({ maxLength: 512 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const flow = read<Flow>(request, flowCookie, FLOW_AAD);
      reply.header('set-cookie', cookies.clearing(flowCookie));
      const { code, state } = request.query;
      if (!flow || flow.exp < now() || !code || state !== flow.state)
        throw new Problem('admin.console_sign_in_failed', {
          headers: { 'set-cookie': cookies.clearing(flowCookie) },
        });
      const answer = await opts.provider.token({
        grant_type: 'authorization_code',
        code,
        redirect_uri: `${origin}${CONSOLE_CALLBACK_PATH}`,
        client_id: CONSOLE_CLIENT_ID,
        code_verifier: flow.verifier,
      });
      if (answer.status !== 200 || !answer.accessToken)
        throw new Problem('admin.console_sign_in_failed', {
          headers: { 'set-cookie': cookies.clearing(flowCookie) },
        });
      // Not an operator, or a session without a second factor: no console session at all.
      if (!(await operators.authenticate(answer.accessToken)))
        throw new Problem('admin.forbidden', { headers: { 'set-cookie': cookies.clearing(flowCookie) } });
      const session: ConsoleSession = {
        token: answer.accessToken,
        seen: now(),
        exp: now() + (answer.expiresIn ?? 0),
      };
      reply.header('set-cookie', [
        cookies.clearing(flowCookie),
        cookies.serialize(
          sessionCookie,
          sealer.seal(JSON.stringify(session), SESSION_AAD),
          Math.min(config.admin.console.idleTimeout, session.exp - session.seen),
        ),
      ]);
      return reply.code(303).header('location', `${CONSOLE_PREFIX}/`).send();
    },
  );

  app.post(
    `${CONSOLE_PREFIX}/session`,
    {
      onRequest: sameOrigin,
      schema: {
        hide: true,
        response: responses(
          {
            200: Data(
              Type.Object(
                {
                  accessToken: Type.String(),
                  identityId: Type.String(),
                  role: Type.String(),
                  idleTimeout: Type.Integer(),
                },
                { additionalProperties: false },
              ),
            ),
          },
          ['admin.console_session_ended', 'identity.cross_site_refused'],
        ),
      },
    },
    async (request, reply) => {
      const session = read<ConsoleSession>(request, sessionCookie, SESSION_AAD);
      const t = now();
      if (!session || session.seen + config.admin.console.idleTimeout <= t || session.exp <= t) throw ended();
      const operator = await operators.authenticate(session.token);
      if (!operator) throw ended();
      const renewed: ConsoleSession = { ...session, seen: t };
      reply.header(
        'set-cookie',
        cookies.serialize(
          sessionCookie,
          sealer.seal(JSON.stringify(renewed), SESSION_AAD),
          Math.min(config.admin.console.idleTimeout, session.exp - t),
        ),
      );
      return envelope({
        accessToken: session.token,
        identityId: operator.identityId,
        role: operator.role,
        idleTimeout: config.admin.console.idleTimeout,
      });
    },
  );

  app.post(
    `${CONSOLE_PREFIX}/sign-outs`,
    {
      onRequest: sameOrigin,
      schema: { hide: true, response: responses({ 204: NoContent }, ['identity.cross_site_refused']) },
    },
    async (request, reply) => {
      const session = read<ConsoleSession>(request, sessionCookie, SESSION_AAD);
      if (session) await opts.provider.revoke(session.token);
      return reply.code(204).header('set-cookie', clearSession).send();
    },
  );
});
