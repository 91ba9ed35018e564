import { createHash, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import Provider, { type Configuration, interactionPolicy, type JWK } from 'oidc-provider';
import type { OutboundFetch } from '../../src/features/providers/upstream.js';

/*
 * Fakes of the upstream identity providers "Continue with …" signs in through: a real
 * oidc-provider as the OpenID provider (Google, Microsoft, Apple, or any issuer found by
 * discovery), a small GitHub, an OutboundFetch that sends the real hosts to them, and a browser
 * that follows an authorization URL until the upstream sends it back to the service's callback.
 * Where a real provider departs from what oidc-provider does (Entra's `{tenantid}` issuer, Google's
 * bare `iss`, Apple's minted secret and `user` field), the fake reproduces the departure around
 * the library, not inside it.
 */

export interface UpstreamClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

/** The client: as `client`, or its three fields given directly. */
export type StartUpstreamOptions = UpstreamSetup & ({ client: UpstreamClient } | UpstreamClient);

export interface UpstreamSetup {
  /** Default: the fake's own `http://127.0.0.1:<port>` (the browser suite's upstream). */
  issuer?: string;
  /** Served under this path too, e.g. `/common/v2.0` (Entra's multi-tenant discovery path). */
  pathPrefix?: string;
  /** Rewrites the discovery document, e.g. Entra's issuer `https://login.microsoftonline.com/{tenantid}/v2.0`. */
  discovery?: (document: Record<string, unknown>) => Record<string, unknown>;
  /** Leaves `iss` out of authorization responses and discovery (Entra sends none). */
  omitIssParameter?: boolean;
  /**
   * Apple: the client secret must be an ES256 JWT signed by this key (iss = teamId, sub = the
   * client id, aud = https://appleid.apple.com, kid = keyId), checked before the provider sees it.
   */
  appleSecret?: { publicKey: KeyObject; teamId: string; keyId: string };
  /** OpenID Connect's default (claims asked for by scope only in UserInfo); the fake's default is off. */
  conformIdTokenClaims?: boolean;
  /** Accounts by subject; more with setAccount(). */
  accounts?: Record<string, Record<string, unknown>>;
}

export interface Upstream {
  /** The issuer the fake was started with (its discovery may say otherwise, see `discovery`). */
  readonly issuer: string;
  /** `http://127.0.0.1:<port>`: where hostMappingFetch sends the issuer's host. */
  readonly origin: string;
  /** The provider's accounts: claims by subject, read at every token issued. */
  readonly accounts: Map<string, Record<string, unknown>>;
  /** Adds (or replaces) an account, which the next authorizations sign in (`login`). */
  setAccount(account: { sub: string } & Record<string, unknown>): void;
  setAccount(sub: string, claims: Record<string, unknown>): void;
  /** The account the next authorization signs in, without a page. */
  login: string;
  /** The next authorization is answered `error=access_denied` (the person said no). */
  deny: boolean;
  denyNext(): void;
  /**
   * The fake has no sign-in page: every authorization signs `login` in (or is denied) by
   * redirects alone, so a browser test has nothing to answer. Kept so a test reads like the real
   * thing; resolves at once.
   */
  signInIfAsked(page?: unknown): Promise<void>;
  /** The `iss` of the ID tokens the token endpoint issues, when not the issuer (Google's bare spelling, an Entra tenant). */
  tokenIssuer: string | undefined;
  /** Apple: the `user` form field posted with the next form_post response only (Apple's first authorization). */
  appleUser: Record<string, unknown> | undefined;
  /** Apple: the client secrets the token endpoint accepted. */
  readonly appleSecrets: string[];
  /** Every request: `METHOD /path` as received (before a path prefix is stripped). */
  readonly requests: string[];
  close(): Promise<void>;
}

let signingKey: JWK | undefined;

/** One RS256 key for every fake in the process: RSA generation is slow. */
function rsaSigningKey(): JWK {
  signingKey ??= {
    ...(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      format: 'jwk',
    }) as unknown as JWK),
    kid: 'upstream-test-key',
    alg: 'RS256',
    use: 'sig',
  };
  return signingKey;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function htmlEscape(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A real OpenID provider (oidc-provider) on a loopback port, signing in `login` at once. */
export async function startUpstream(opts: StartUpstreamOptions): Promise<Upstream> {
  let handler: (req: IncomingMessage, res: ServerResponse) => Promise<void> = async () => {};
  const server = createServer((req, res) => {
    handler(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const origin = await listen(server);
  const issuer = opts.issuer ?? origin;
  const accounts = new Map(Object.entries(opts.accounts ?? {}));
  const client: UpstreamClient =
    'client' in opts
      ? opts.client
      : { clientId: opts.clientId, clientSecret: opts.clientSecret, redirectUris: opts.redirectUris };
  // What the provider is told the client's secret is when Apple's minted one was proved.
  const registeredSecret = opts.appleSecret ? randomBytes(32).toString('base64url') : client.clientSecret;

  // Every authorization asks for a sign-in, answered at once with `login`: a browser that still
  // holds the fake's session is signed in as the account the test chose now (or denied), not as
  // the one before.
  const policy = interactionPolicy.base();
  policy
    .get('login')
    ?.checks.add(
      new interactionPolicy.Check(
        'every_authorization',
        'the fake signs `login` in each time',
        (ctx) => !ctx.oidc.result?.login,
      ),
    );

  const configuration: Configuration = {
    clients: [
      {
        client_id: client.clientId,
        client_secret: registeredSecret,
        redirect_uris: client.redirectUris,
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [rsaSigningKey()] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    findAccount: (_ctx, sub) => {
      const claims = accounts.get(sub);
      return claims ? { accountId: sub, claims: () => ({ ...claims, sub }) } : undefined;
    },
    // Entra's tid/oid ride on openid; xms_edov on email; Apple's `name` scope adds no claim.
    claims: {
      openid: ['sub', 'tid', 'oid'],
      email: ['email', 'email_verified', 'xms_edov', 'is_private_email'],
      profile: ['name', 'given_name', 'family_name'],
    },
    scopes: ['openid', 'email', 'profile', 'name'],
    conformIdTokenClaims: opts.conformIdTokenClaims ?? false,
    features: { devInteractions: { enabled: false } },
    interactions: { policy, url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    responseTypes: ['code'],
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
  };
  const provider = new Provider(issuer, configuration);
  // hostMappingFetch says which host and scheme the request was for (https://accounts.google.com…).
  provider.proxy = true;
  const settable = provider as unknown as { issuer: string };

  const upstream: Upstream = {
    issuer,
    origin,
    accounts,
    setAccount: (
      subOrAccount: string | ({ sub: string } & Record<string, unknown>),
      claims?: Record<string, unknown>,
    ) => {
      const { sub, ...rest } =
        typeof subOrAccount === 'string' ? { ...claims, sub: subOrAccount } : subOrAccount;
      accounts.set(sub, rest);
      upstream.login = sub;
    },
    login: Object.keys(opts.accounts ?? {})[0] ?? '',
    deny: false,
    denyNext: () => {
      upstream.deny = true;
    },
    signInIfAsked: async () => {},
    tokenIssuer: undefined,
    appleUser: undefined,
    appleSecrets: [],
    requests: [],
    close: () => close(server),
  };

  const toClient = (location: string) => client.redirectUris.some((uri) => location.startsWith(uri));
  provider.use(async (ctx, next) => {
    const tokenIssuer = ctx.path === '/token' ? upstream.tokenIssuer : undefined;
    // The ID token's `iss` is the provider's issuer at the moment it is signed; the tests run one
    // exchange at a time, so it is swapped for this request only.
    if (tokenIssuer) settable.issuer = tokenIssuer;
    try {
      await next();
    } finally {
      if (tokenIssuer) settable.issuer = issuer;
    }
    if (ctx.path === '/.well-known/openid-configuration' && ctx.body && typeof ctx.body === 'object') {
      let document = { ...(ctx.body as Record<string, unknown>) };
      if (opts.omitIssParameter) delete document.authorization_response_iss_parameter_supported;
      if (opts.discovery) document = opts.discovery(document);
      ctx.body = document;
    }
    const location = ctx.response.get('location');
    if (opts.omitIssParameter && location && toClient(location)) {
      const url = new URL(location);
      url.searchParams.delete('iss');
      ctx.set('location', url.href);
    }
    if (typeof ctx.body === 'string' && ctx.body.includes('<form method="post"')) {
      let html = ctx.body;
      if (opts.omitIssParameter)
        html = html.replace(/<input type="hidden" name="iss" value="[^"]*"\/>\n?/, '');
      if (upstream.appleUser) {
        const field = `<input type="hidden" name="user" value="${htmlEscape(JSON.stringify(upstream.appleUser))}"/>`;
        html = html.replace('<noscript>', `${field}\n    <noscript>`);
        upstream.appleUser = undefined;
      }
      ctx.body = html;
    }
  });
  const callback = provider.callback() as unknown as (
    req: IncomingMessage,
    res: ServerResponse,
  ) => Promise<void>;

  /** The sign-in page, answered at once: `deny`, or `login` signed in and everything asked for granted. */
  async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (upstream.deny) {
      upstream.deny = false;
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The person declined' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId: upstream.login } });
      return;
    }
    const accountId = details.session?.accountId ?? upstream.login;
    const grant =
      (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
      new provider.Grant({ accountId, clientId: String(details.params.client_id) });
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } });
  }

  /** Apple's token endpoint: the client secret is a JWT signed by the team's key, not a shared secret. */
  async function appleToken(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const apple = opts.appleSecret;
    if (!apple) return true;
    const form = new URLSearchParams(await readBody(req));
    const secret = form.get('client_secret') ?? '';
    try {
      const { payload } = await jwtVerify(secret, apple.publicKey, {
        algorithms: ['ES256'],
        issuer: apple.teamId,
        subject: client.clientId,
        audience: 'https://appleid.apple.com',
      });
      if (decodeProtectedHeader(secret).kid !== apple.keyId) throw new Error('kid');
      if (
        typeof payload.iat !== 'number' ||
        typeof payload.exp !== 'number' ||
        payload.exp - payload.iat > 15_777_000
      ) {
        throw new Error('lifetime');
      }
    } catch {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'invalid_client' }));
      return false;
    }
    upstream.appleSecrets.push(secret);
    form.set('client_secret', registeredSecret);
    // The body was read here: oidc-provider takes an already-read body from req.body.
    (req as IncomingMessage & { body?: string }).body = form.toString();
    return true;
  }

  handler = async (req, res) => {
    upstream.requests.push(`${req.method} ${req.url}`);
    if (opts.pathPrefix && req.url?.startsWith(`${opts.pathPrefix}/`)) {
      req.url = req.url.slice(opts.pathPrefix.length);
    }
    const path = new URL(req.url ?? '/', 'http://upstream').pathname;
    if (req.method === 'GET' && path.startsWith('/interaction/')) return interaction(req, res);
    if (req.method === 'POST' && path === '/token' && !(await appleToken(req, res))) return;
    await callback(req, res);
  };
  return upstream;
}

export interface GitHubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  visibility?: string | null;
}

export interface GitHubFake {
  /** `http://127.0.0.1:<port>`: where `github.com` and `api.github.com` are sent. */
  readonly origin: string;
  user: { id: number; login: string; name: string | null };
  emails: GitHubEmail[];
  /** Answer /user/emails with this status instead (403: the user:email scope was not granted). */
  emailsStatus: number;
  /** The next authorization is answered `error=access_denied`. */
  deny: boolean;
  /** Every request: `METHOD /path`. */
  readonly requests: string[];
  close(): Promise<void>;
}

/**
 * GitHub's OAuth 2 as it behaves: the authorize redirect with code and state, a token endpoint that
 * answers errors with 200 and an `error` body, and the REST API's /user and /user/emails.
 */
export async function startGitHub(opts: { clientId: string; clientSecret: string }): Promise<GitHubFake> {
  const codes = new Map<string, { redirectUri: string | null; challenge: string | null }>();
  const tokens = new Set<string>();
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
  };
  let fake!: GitHubFake;
  const server = createServer((req, res) => {
    fake.requests.push(`${req.method} ${req.url}`);
    const url = new URL(req.url ?? '/', 'http://github');
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const redirectUri = url.searchParams.get('redirect_uri');
      if (url.searchParams.get('client_id') !== opts.clientId || !redirectUri) {
        res.writeHead(400).end();
        return;
      }
      const back = new URL(redirectUri);
      if (fake.deny) {
        fake.deny = false;
        back.searchParams.set('error', 'access_denied');
        back.searchParams.set('error_description', 'The user has denied your application access.');
      } else {
        const code = randomBytes(10).toString('hex');
        const method = url.searchParams.get('code_challenge_method');
        if (url.searchParams.has('code_challenge') && method !== 'S256') {
          res.writeHead(400).end();
          return;
        }
        codes.set(code, { redirectUri, challenge: url.searchParams.get('code_challenge') });
        back.searchParams.set('code', code);
      }
      const state = url.searchParams.get('state');
      if (state !== null) back.searchParams.set('state', state);
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      readBody(req).then(
        (text) => {
          const form = new URLSearchParams(text);
          if (form.get('client_id') !== opts.clientId || form.get('client_secret') !== opts.clientSecret) {
            json(res, 200, { error: 'incorrect_client_credentials' });
            return;
          }
          const code = form.get('code') ?? '';
          const issued = codes.get(code);
          codes.delete(code);
          const verifier = form.get('code_verifier') ?? '';
          const proved =
            issued?.challenge == null ||
            createHash('sha256').update(verifier).digest('base64url') === issued.challenge;
          const sameRedirect = !form.has('redirect_uri') || form.get('redirect_uri') === issued?.redirectUri;
          if (!issued || !proved || !sameRedirect) {
            json(res, 200, {
              error: 'bad_verification_code',
              error_description: 'The code passed is incorrect or expired.',
            });
            return;
          }
          const token = `gho_${randomBytes(18).toString('hex')}`;
          tokens.add(token);
          json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
        },
        () => res.destroy(),
      );
      return;
    }
    if (req.method === 'GET' && (url.pathname === '/user' || url.pathname === '/user/emails')) {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !tokens.has(token)) {
        json(res, 401, { message: 'Bad credentials' });
        return;
      }
      if (url.pathname === '/user') json(res, 200, fake.user);
      else if (fake.emailsStatus !== 200)
        json(res, fake.emailsStatus, { message: 'Resource not accessible' });
      else json(res, 200, fake.emails);
      return;
    }
    res.writeHead(404).end();
  });
  const origin = await listen(server);
  fake = {
    origin,
    user: { id: 1234567, login: 'octocat', name: 'The Octocat' },
    emails: [],
    emailsStatus: 200,
    deny: false,
    requests: [],
    close: () => close(server),
  };
  return fake;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * An OutboundFetch sending `https://accounts.google.com/...` (any host in `map`, read at each call)
 * to `http://127.0.0.1:<port>/...`, telling the fake the host and scheme it was for. Loopback URLs
 * go as they are; any other host is refused, so no test reaches the network.
 */
export function hostMappingFetch(map: Record<string, string>): OutboundFetch {
  return async (url, options) => {
    const target = new URL(url);
    const origin = map[target.host];
    if (!origin) {
      if (LOOPBACK.has(target.hostname)) return fetch(url, options as RequestInit);
      throw new Error(`hostMappingFetch: no fake for ${target.host}`);
    }
    const to = new URL(`${target.pathname}${target.search}`, origin);
    return fetch(to, {
      ...(options as RequestInit),
      headers: {
        ...options.headers,
        'x-forwarded-host': target.host,
        'x-forwarded-proto': target.protocol.slice(0, -1),
      },
    });
  };
}

/** The cookies a browser keeps, per host (attributes other than expiry are not needed here). */
export class BrowserJar {
  readonly #hosts = new Map<string, Map<string, string>>();

  take(host: string, response: Response): void {
    let cookies = this.#hosts.get(host);
    if (!cookies) {
      cookies = new Map();
      this.#hosts.set(host, cookies);
    }
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq < 1) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = /max-age=0\b/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line);
      if (value === '' || expired) cookies.delete(name);
      else cookies.set(name, value);
    }
  }

  header(host: string): string {
    return [...(this.#hosts.get(host) ?? [])].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/** Where the upstream sent the browser back: a redirect to the callback, or a form it would POST there. */
export type CallbackArrival =
  | { method: 'GET'; url: string }
  | { method: 'POST'; url: string; form: URLSearchParams };

const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
};
const unescapeHtml = (value: string) => value.replace(/&(?:amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m);

/** oidc-provider's form_post page: its action and hidden inputs. */
function formPostOf(html: string): { action: string; form: URLSearchParams } | undefined {
  const action = /<form method="post" action="([^"]*)">/.exec(html)?.[1];
  if (action === undefined) return undefined;
  const form = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\/>/g)) {
    form.append(unescapeHtml(name ?? ''), unescapeHtml(value ?? ''));
  }
  return { action: unescapeHtml(action), form };
}

/**
 * Plays the browser from an authorization URL: follows the upstream's redirects (through `fetch`,
 * e.g. hostMappingFetch, keeping its cookies) until it is sent to `callback` (the service's
 * redirect URI), and answers where it arrived without going there.
 */
export async function followToCallback(
  authorizationUrl: string | URL,
  opts: { callback: string; fetch?: OutboundFetch; jar?: BrowserJar },
): Promise<CallbackArrival> {
  const send: OutboundFetch = opts.fetch ?? ((url, options) => fetch(url, options as RequestInit));
  const jar = opts.jar ?? new BrowserJar();
  const callback = new URL(opts.callback);
  const atCallback = (url: URL) => url.origin === callback.origin && url.pathname === callback.pathname;
  let url = new URL(authorizationUrl);
  for (let hop = 0; hop < 20; hop++) {
    if (atCallback(url)) return { method: 'GET', url: url.href };
    const cookie = jar.header(url.host);
    const response = await send(url.href, {
      method: 'GET',
      headers: { accept: 'text/html', ...(cookie ? { cookie } : {}) },
      redirect: 'manual',
      body: undefined,
    });
    jar.take(url.host, response);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      url = new URL(location, url);
      continue;
    }
    const posted = formPostOf(await response.text());
    if (posted) {
      const action = new URL(posted.action, url);
      if (atCallback(action)) return { method: 'POST', url: action.href, form: posted.form };
    }
    throw new Error(
      `followToCallback: ${url.pathname} answered ${response.status} instead of sending the browser back`,
    );
  }
  throw new Error('followToCallback: too many redirects');
}

/** The callback as the service receives it (a WHATWG Request at the redirect URI). */
export function callbackRequest(arrival: CallbackArrival): Request {
  if (arrival.method === 'GET') return new Request(arrival.url);
  return new Request(arrival.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: arrival.form.toString(),
  });
}
