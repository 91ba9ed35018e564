import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type {
  Adapter,
  AdapterPayload,
  Configuration,
  Interaction,
  InteractionResults,
  KoaContextWithOIDC,
  default as Provider,
} from 'oidc-provider';
import type { Config, OidcClientConfig } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { pictureUrl } from '../identities/picture.js';
import { type ProfileNames, shownName } from '../identities/profile.js';
import { errorPage } from './error-page.js';
import {
  type DeviceInputError,
  deviceConfirmPage,
  deviceInputPage,
  deviceSuccessPage,
  escapeHtml,
  page,
  pageLocale,
} from './pages.js';

/*
 * The one module that touches oidc-provider (docs/oidc.md): its configuration, the adapter it
 * calls (over the storage of adapter.ts), the bridge from Fastify's request to its Koa handler,
 * and the few calls into its interactions and clients. A version bump of the library is a change
 * here only; the other modules name its types through this one.
 */

export type { Interaction };

/** A live session of the hosted pages, named by their cookie (sessions/browser-session.ts). */
export interface HostedSession {
  identityId: string;
  sessionId: string;
  /** When the session was opened: the sign-in's auth_time. */
  signedInAt: Date;
  method: string;
  /** The channel of a code sign-in's code ('email' or 'phone'), else null. */
  channel: string | null;
  /** The organization's connection of an `sso` sign-in, else null. */
  ssoConnectionId?: string | null;
  epoch: number;
}

/** What the provider stores of one model (its name), through the storage adapter (adapter.ts). */
export interface PayloadStore {
  upsert(id: string, payload: Record<string, unknown>, expiresIn: number | undefined): Promise<void>;
  /** Only while unexpired and while the grant it belongs to is live. */
  find(id: string): Promise<Record<string, unknown> | undefined>;
  /** The device code a person typed (normalized), while its row is kept. */
  findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined>;
  findByUid(uid: string): Promise<Record<string, unknown> | undefined>;
  /**
   * The tokens under one id among `kinds`, by kind, each as `find` finds it, with its grant's
   * payload (null: gone or expired) and the grant's account (its claims now) read in the same
   * statement: what the library reads next about it.
   */
  findTokens(id: string, kinds: readonly string[]): Promise<Map<string, FoundToken>>;
  /** Compare-and-set: false when it was already consumed. */
  consume(id: string): Promise<boolean>;
  /**
   * A refresh token rotated in one statement: `consumedId` consumed (as `consume`) and the new one
   * stored (as `upsert`). False when `consumedId` was consumed already; the new one is stored
   * anyway and goes when the caller ends its grant.
   */
  rotate(
    consumedId: string,
    id: string,
    payload: Record<string, unknown>,
    expiresIn: number | undefined,
  ): Promise<boolean>;
  destroy(id: string): Promise<void>;
  /**
   * Stores a payload under an id that is not there yet (or only expired) in one statement: true
   * when this call stored it, false when a live one was already there.
   */
  claim(id: string, payload: Record<string, unknown>, expiresIn: number): Promise<boolean>;
  /** Ends the grant (no back-channel logout: its client or a reuse asked for it) and deletes its tokens. */
  revokeByGrantId(grantId: string, reason: string): Promise<void>;
}

/** A token and what was read with it (PayloadStore.findToken). */
export interface FoundToken {
  payload: Record<string, unknown>;
  /** Absent when the token has no grant; null when the grant is not found. */
  grant?: Record<string, unknown> | null;
  account?: { identityId: string; claims: AccountClaims };
}

/** A client with what the provider must never see: its secret only as a hash. */
export interface RegisteredClient extends Omit<OidcClientConfig, 'clientSecret'> {
  /** SHA-256 (hex) of the secret; null for a public client. */
  secretHash: string | null;
}

export interface AccountClaims {
  email?: { value: string };
  phone?: { value: string };
  /** The `profile` scope's facts: the identity's name (migration 0029) and language (0027). */
  profile?: ProfileNames & { locale: string; pictureId?: string | null };
}

/** The `organization` scope's claims: the active organization of the grant's service session. */
export interface OrganizationClaims {
  org_id: string;
  org_name: string;
  org_slug: string;
  org_role: string;
  org_permissions: string[];
  /** The SCIM groups of the person there that map to no role (docs/scim.md). */
  org_groups: string[];
}

export interface OidcProviderDeps {
  config: Config;
  clock: Clock;
  /** The storage of one of the library's models, by its name. */
  storage(name: string): PayloadStore;
  findClient(clientId: string): Promise<RegisteredClient | undefined>;
  /** The verified identifiers of a live (enabled) identity; undefined for any other id. */
  account(identityId: string): Promise<AccountClaims | undefined>;
  /**
   * The active organization (enabled, the membership current) of the service session a grant is
   * linked to, read when the claims are asked for; undefined when there is none.
   */
  grantOrganization(grantId: string, identityId: string): Promise<OrganizationClaims | undefined>;
  /** The hosted pages' live session named by this request's cookie header. */
  hostedSession(cookieHeader: string | undefined): Promise<HostedSession | undefined>;
  /**
   * Home-realm discovery (docs/sso.md, "Signing in"): the enabled organization's id for an
   * `organization` parameter (its id or slug) when it has an enabled connection, else undefined;
   * and the organization of a session's connection, while both are enabled.
   */
  sso: {
    routedOrganization(organization: string): Promise<string | undefined>;
    connectionOrganization(connectionId: string): Promise<string | undefined>;
  };
  /** Private JWKs, first of each algorithm signs: RS256 and EdDSA for ID tokens. */
  signingKeys: Record<string, unknown>[];
  /** 32 bytes that sign the provider's own cookies. */
  cookieKey: Buffer;
  /** 32 bytes the DPoP nonces are made from: every instance makes and checks the same ones. */
  dpopNonceKey: Buffer;
  /** RP-initiated logout confirmed: the hosted session named by the cookie ends too. */
  endHostedSession(cookieHeader: string | undefined): Promise<void>;
  /** Set-Cookie that clears the hosted pages' cookie. */
  clearHostedCookie: string;
  /** Protocol error pages and notices (never a token or a code in them). */
  log: { warn(obj: object, msg: string): void };
  /**
   * The custom_claims hook's claims for a person's token (reserved names already dropped); throws
   * when the hook fails closed (docs/events.md, "Synchronous hooks").
   */
  customClaims(request: {
    identityId: string;
    clientId: string;
    scope: string;
  }): Promise<Record<string, unknown>>;
}

/**
 * What the provider asks of enterprise sign-in (sso/service.ts, SsoService) to route an
 * authorization request by `login_hint` or `organization` (docs/oidc.md, "Enterprise sign-in").
 */
export interface SsoRouting {
  route(input: {
    email?: string;
    organization?: string;
  }): Promise<{ connectionId: string; organizationId: string } | undefined>;
  enabledConnectionOrganization(connectionId: string): Promise<string | undefined>;
  start(connectionId: string, returnTo: string): Promise<{ redirectUrl: string; cookie: string }>;
}

/** Per request: the Cookie header (hosted session) and a client secret checked against its hash. */
interface RequestScope {
  cookie: string | undefined;
  hosted?: Promise<HostedSession | undefined>;
  verified?: { clientId: string; secret: string };
  /** Provider sessions found in this request (by uid): the hosted session each stands for. */
  standing: Map<string, string>;
  /**
   * What a token's find read in its statement ahead of the library's next reads in this request
   * (docs/performance.md, "OpenID Provider reads"): its grant by id, its account by id. Each is
   * taken once, by the read it stands for, and lives no longer than the request.
   */
  grants: Map<string, Record<string, unknown> | null>;
  accounts: Map<string, AccountClaims>;
  /**
   * The token lookup of each presented value: the library looks one value up as several models at
   * once (introspection: an access token and a client credentials token, then a refresh token),
   * and one statement answers them all. Each model's answer is taken once; a second find of it in
   * the request reads again.
   */
  tokens: Map<string, { found: Promise<Map<string, FoundToken>>; taken: Set<string> }>;
  /**
   * The refresh token the refresh grant consumed, held until the library stores its successor, so
   * the consume and the new token share one statement and one commit (the adapter's `rotate`).
   * Consumed on its own at the end of the request if no successor came.
   */
  consuming?: string;
}

/** The models found by value with their grant and account in one statement (PayloadStore.findTokens). */
export const TOKEN_MODELS = [
  'AccessToken',
  'ClientCredentials',
  'RefreshToken',
  'AuthorizationCode',
] as const;

/**
 * A presented value's token lookup made before the request reached the library (with the client's
 * guess budget, OidcService.verifyClientSecret): the library's finds of that value take it as they
 * take their own first lookup, once per model.
 */
export interface PrefetchedTokens {
  id: string;
  found: Map<string, FoundToken>;
}
const isTokenModel = (name: string) => (TOKEN_MODELS as readonly string[]).includes(name);

export const ACR = {
  singleFactor: 'urn:identity-service:acr:single-factor',
  multiFactor: 'urn:identity-service:acr:multi-factor',
} as const;

/** RFC 8176 values for how the session was opened (docs/oidc.md, "Claims"). */
const sso = (connectionId: string | null): string[] => (connectionId ? ['fed', `sso:${connectionId}`] : []);

export function authenticationOf(
  method: string,
  channel: string | null = null,
  connectionId: string | null = null,
): { amr: string[]; acr: string } {
  switch (method) {
    case 'password':
      return { amr: ['pwd'], acr: ACR.singleFactor };
    case 'provider':
      return { amr: ['fed'], acr: ACR.singleFactor };
    // An organization's own IdP (SAML, docs/sso.md): federated, one factor, and which connection.
    case 'sso':
      return { amr: connectionId ? ['fed', `sso:${connectionId}`] : ['fed'], acr: ACR.singleFactor };
    case 'passkey':
      return { amr: ['hwk'], acr: ACR.singleFactor };
    // A one-time code sent by email or SMS (POST /sign-ins/codes, a sign-up by code): one factor,
    // with the channel it went out on (RFC 8176 `email`, `sms`).
    case 'code':
      return {
        amr: channel === 'email' ? ['otp', 'email'] : channel === 'phone' ? ['otp', 'sms'] : ['otp'],
        acr: ACR.singleFactor,
      };
    // After an SSO first step (the ticket kept its connection), the connection is named as well.
    case 'second_factor':
      return { amr: [...sso(connectionId), 'otp', 'mfa'], acr: ACR.multiFactor };
    case 'recovery_code':
      return { amr: [...sso(connectionId), 'mfa'], acr: ACR.multiFactor };
    default:
      return { amr: [], acr: ACR.singleFactor };
  }
}

/** The paths the provider answers on this origin; everything else is Fastify's. */
export const OIDC_PATHS = {
  prefix: '/oidc',
  discovery: '/.well-known/openid-configuration',
  authorizationServer: '/.well-known/oauth-authorization-server',
  jwks: '/.well-known/jwks.json',
  interaction: '/oidc/interaction',
  /** The browser endpoints: limited per address and taking POST as GET (routes.ts). */
  authorization: '/oidc/auth',
  endSession: '/oidc/session/end',
  /** The device flow's verification page, where a person types the user code (RFC 8628 3.3). */
  codeVerification: '/oidc/device',
  /** Client authentication happens at these (and the budget covers it). */
  clientAuthenticated: [
    '/oidc/token',
    '/oidc/device/auth',
    '/oidc/token/introspection',
    '/oidc/token/revocation',
    '/oidc/request',
  ],
} as const;

/**
 * `prompt=none` from a browser with a hosted session but no provider session yet: the bridge turns
 * it into an interaction marked silent, which logs in from the hosted session and answers an error
 * instead of ever showing a page (service.ts, nextStep).
 */
export const SILENT_PARAM = 'x_silent';

/**
 * The authorization parameter naming the organization whose IdP must sign the person in (its id
 * or slug; docs/oidc.md, "Enterprise sign-in"). Unknown, disabled or without an enabled
 * connection: one invalid_request, the same for each (docs/decisions.md).
 */
export const ORGANIZATION_PARAM = 'organization';

/** The connection an amr names (`sso:<connectionId>`), if any. */
function ssoConnectionOf(amr: readonly string[] | undefined): string | undefined {
  const named = amr?.find((value) => value.startsWith('sso:'));
  return named?.slice('sso:'.length);
}

/**
 * What one request may make the provider keep, in UTF-8 bytes: an authorization request's
 * parameters are stored with its interaction (an hour) or its pushed request, an end-session
 * request's `state` and `ui_locales` in the provider's session. A few KB is far above anything an
 * RP sends (a `state` carrying a return URL, a hint that is an address); `id_token_hint` is one
 * of our own ID tokens, whose `nonce` alone may be 2 KB. The total keeps every parameter at its cap
 * from adding up (docs/oidc.md, "Limits").
 */
const PARAMETER_CAPS = { each: 2048, idTokenHint: 8192, total: 12288 } as const;

/** The parameters the library's end-session endpoint reads; unknown ones are dropped unread. */
export const END_SESSION_PARAMS = [
  'id_token_hint',
  'post_logout_redirect_uri',
  'state',
  'ui_locales',
  'client_id',
  'logout_hint',
] as const;

/** Why these parameters are over PARAMETER_CAPS (an error_description), or undefined. */
export function overCap(params: Iterable<[string, unknown]>): string | undefined {
  let total = 0;
  for (const [name, value] of params) {
    if (typeof value !== 'string') continue;
    const bytes = Buffer.byteLength(value, 'utf8');
    const cap = name === 'id_token_hint' ? PARAMETER_CAPS.idTokenHint : PARAMETER_CAPS.each;
    if (bytes > cap) return `${name} is longer than ${cap} bytes`;
    total += bytes;
  }
  return total > PARAMETER_CAPS.total
    ? `the parameters are longer than ${PARAMETER_CAPS.total} bytes together`
    : undefined;
}

/**
 * The device flow's user code (docs/oidc.md, "Device authorization grant"): 8 characters of the
 * library's 20 consonants (no vowels, so no word is spelled; no digits to mistake for letters),
 * 20^8 ≈ 2.56e10 codes. A code lives DEVICE_CODE_TTL seconds; the verification endpoint's
 * per-address limit bounds the guesses (the bound is worked out in the docs).
 */
export const DEVICE_CODE_TTL = 600;
const USER_CODE = { charset: 'base-20', mask: '****-****' } as const;

/**
 * Seconds a device waits between polls: the library's device authorization answer names no
 * interval, so RFC 8628 3.2's default of 5 holds, and a sooner poll is answered slow_down
 * (routes.ts, before the library sees it).
 */
export const DEVICE_POLL_INTERVAL = 5;

/** Where the library's own device form posts and its anti-CSRF value: our pages post the same. */
function deviceForm(html: string) {
  const action = /action="([^"]+)"/.exec(html)?.[1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !xsrf) throw new Error('the device form changed shape');
  return { action, xsrf };
}

/** The language of a device page: the device's ui_locales, else the browser's Accept-Language. */
function deviceLocale(ctx: KoaContextWithOIDC) {
  const params = (ctx.oidc?.entities as { DeviceCode?: { params?: Record<string, unknown> } } | undefined)
    ?.DeviceCode?.params;
  return pageLocale(params?.ui_locales, (langs) => ctx.acceptsLanguages(langs));
}

/**
 * How long a claimed jti is kept at least: the library's DPoP replay window (300 seconds, what it
 * saves a proof's jti for), past which its nonce check refuses the proof anyway.
 */
const REPLAY_CLAIM_TTL = 300;

/** How long an interaction lives, in seconds (its sign-in page's record lives as long). */
export const INTERACTION_TTL = 3600;

/**
 * The hosted session a provider session stands for, by id: a field of ours in the stored session
 * (the library keeps only its own fields, so the adapter adds it at every save) and in the login
 * result that opens it.
 */
const HOSTED_SESSION = 'x_hosted_session';

const ORGANIZATION_SCOPE = 'organization';
const ORGANIZATION_CLAIMS = [
  'org_id',
  'org_name',
  'org_slug',
  'org_role',
  'org_permissions',
  'org_groups',
] as const;

/**
 * Every scope the provider knows speaks for a person (their identity, identifiers, organization or
 * a refresh beyond their session), so none of them is granted to client_credentials, where no
 * person is behind the token (docs/oidc.md, "Grants"). Any other value the library drops on that
 * grant (resource indicators are off).
 */
const PERSON_SCOPES = ['openid', 'offline_access', 'email', 'phone', 'profile', ORGANIZATION_SCOPE];

const SCOPE_CLAIMS = {
  openid: ['sub', 'acr', 'amr', 'auth_time', 'sid'],
  email: ['email', 'email_verified'],
  phone: ['phone_number', 'phone_number_verified'],
  profile: ['name', 'given_name', 'family_name', 'picture', 'locale'],
  [ORGANIZATION_SCOPE]: ORGANIZATION_CLAIMS,
} as const;

/**
 * The `profile` scope's claims (OpenID Connect Core 5.1): each only when the identity has it;
 * `name` is the display name, else the given and family names joined (identities/profile.ts).
 */
function profileClaims(
  profile: NonNullable<AccountClaims['profile']>,
  publicOrigin: string,
): Record<string, string> {
  const name = shownName(profile);
  return {
    ...(name ? { name } : {}),
    ...(profile.givenName ? { given_name: profile.givenName } : {}),
    ...(profile.familyName ? { family_name: profile.familyName } : {}),
    // The picture's public address (identities/picture.ts): a new one with every upload.
    ...(profile.pictureId ? { picture: pictureUrl(publicOrigin, profile.pictureId) } : {}),
    ...(profile.locale ? { locale: profile.locale } : {}),
  };
}

/**
 * The code flow's ID token is masked to the `openid` scope's claims (the library's
 * conformIdTokenClaims: email and phone only at userinfo). The organization claims pass that mask
 * too, so the ID token carries them; claims() answers them only when the token's scope holds
 * `organization`, which is what decides (docs/oidc.md, "Claims").
 */
const CLAIMS = {
  ...SCOPE_CLAIMS,
  openid: [...SCOPE_CLAIMS.openid, ...ORGANIZATION_CLAIMS],
  iss: null,
};

/** The one refusal of an `organization` parameter that routes nowhere, whatever the reason. */
export const UNROUTABLE_ORGANIZATION = 'organization does not sign in through an identity provider';

/**
 * Whether a session made with this amr answers a request naming `organization`: it was made
 * through an enabled connection of that (enabled) organization.
 */
async function sessionFitsOrganization(
  sso: OidcProviderDeps['sso'],
  amr: readonly string[] | undefined,
  organization: string,
): Promise<boolean> {
  const connectionId = ssoConnectionOf(amr);
  if (!connectionId) return false;
  const [wanted, made] = await Promise.all([
    sso.routedOrganization(organization),
    sso.connectionOrganization(connectionId),
  ]);
  return wanted !== undefined && wanted === made;
}

/** The grant an ID token or userinfo answer is made from: the code, refresh or access token's. */
function grantIdOf(token: unknown): string | undefined {
  const grantId = (token as { grantId?: unknown } | undefined)?.grantId;
  return typeof grantId === 'string' ? grantId : undefined;
}

type Library = typeof import('oidc-provider');

/** The library, loaded (loadOidcLibrary): what an OpenIdProvider is built from. */
export type OidcLibrary = Library;
let library: Library | undefined;

/**
 * The library is loaded when the provider is built, after the configuration was read: a bad
 * configuration stops start-up with its one line before the library's import-time notice (it warns
 * on Node 20) could print. Its notices go to the service's log as JSON, not raw to stderr.
 */
let noticeLog: OidcProviderDeps['log'] | undefined;
export async function loadOidcLibrary(log: OidcProviderDeps['log']): Promise<OidcLibrary> {
  noticeLog = log;
  if (library) return library;
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(' ');
    if (noticeLog && text.includes('oidc-provider WARNING')) {
      noticeLog.warn({ library: 'oidc-provider' }, text);
    } else {
      warn(...args);
    }
  };
  library = await import('oidc-provider');
  return library;
}

export class OpenIdProvider {
  readonly provider: Provider;
  readonly #errors: Library['errors'];
  readonly #policy: Library['interactionPolicy'];
  readonly #scope = new AsyncLocalStorage<RequestScope>();
  readonly #callback: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** The library's context of the request being handled (its static `Provider.ctx`). */
  readonly #requestContext: () => KoaContextWithOIDC | undefined;
  /** What the provider is told a confidential client's secret is, unless this request proved it. */
  readonly #unguessable = randomBytes(48).toString('base64url');

  /** Built at once from the library loaded before (loadOidcLibrary), so its owner is built in one step too. */
  constructor(
    private readonly deps: OidcProviderDeps,
    lib: OidcLibrary,
  ) {
    this.#errors = lib.errors;
    this.#policy = lib.interactionPolicy;
    this.#requestContext = () => (lib.default as unknown as { ctx?: KoaContextWithOIDC }).ctx;
    this.provider = new lib.default(deps.config.publicOrigin, this.#configuration());
    this.#addCustomClaimsToIdTokens();
    // Behind the trusted proxies the service is told about, the scheme comes from X-Forwarded-Proto.
    this.provider.proxy = deps.config.trustProxy !== false;
    this.provider.use(async (ctx, next) => {
      await next();
      // The provider's own pages (sign-out confirmation, errors) are never framed (clickjacking).
      if (ctx.response.is('html')) {
        ctx.set('x-frame-options', 'DENY');
        ctx.set('content-security-policy', "frame-ancestors 'none'");
      }
      await this.#afterLogout(ctx as unknown as KoaContextWithOIDC);
    });
    this.#callback = this.provider.callback() as never;
  }

  /**
   * The custom_claims hook's claims, asked once per request and person and client: one token
   * response's access token (extraTokenClaims) and ID token carry the same ones. A hook failing
   * closed is the library's temporarily_unavailable, and nothing is issued.
   */
  readonly #claimsAsked = new WeakMap<object, Map<string, Promise<Record<string, unknown>>>>();
  async #customClaims(ctx: object, request: { identityId: string; clientId: string; scope: string }) {
    let asked = this.#claimsAsked.get(ctx);
    if (!asked) {
      asked = new Map();
      this.#claimsAsked.set(ctx, asked);
    }
    const key = `${request.identityId} ${request.clientId}`;
    let claims = asked.get(key);
    if (!claims) {
      claims = this.deps.customClaims(request);
      asked.set(key, claims);
    }
    try {
      return await claims;
    } catch {
      throw new this.#errors.TemporarilyUnavailable('a claims check did not answer; retry later');
    }
  }

  /**
   * The ID token's claims pass the library's scope mask, which would drop any name outside the
   * scopes' lists; a claim `set` on the token is merged after the mask. So the hook's claims are set
   * on every ID token as it is issued (`use: 'idtoken'`), never over one the library set itself
   * (nonce, sid) nor over a reserved name (already dropped by the hook service).
   */
  #addCustomClaimsToIdTokens(): void {
    const IdToken = this.provider.IdToken as unknown as {
      prototype: {
        issue(this: IdTokenInstance, opts?: { use?: string }): Promise<string>;
      };
    };
    interface IdTokenInstance {
      ctx?: object;
      client?: { clientId: string };
      available: Record<string, unknown>;
      extra: Record<string, unknown>;
      scope?: string;
      set(key: string, value: unknown): void;
    }
    const issue = IdToken.prototype.issue;
    const customClaims = (ctx: object, request: { identityId: string; clientId: string; scope: string }) =>
      this.#customClaims(ctx, request);
    IdToken.prototype.issue = async function (this: IdTokenInstance, opts) {
      const sub = this.available.sub;
      if (opts?.use === 'idtoken' && this.ctx && this.client && typeof sub === 'string') {
        const claims = await customClaims(this.ctx, {
          identityId: sub,
          clientId: this.client.clientId,
          scope: String(this.scope ?? ''),
        });
        for (const [name, value] of Object.entries(claims)) {
          if (!(name in this.extra) && !(name in this.available)) this.set(name, value);
        }
      }
      return issue.call(this, opts);
    };
  }

  /** Hands one request to the provider, with the per-request scope its adapter reads. */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    verified?: RequestScope['verified'],
    prefetched?: PrefetchedTokens,
  ): Promise<void> {
    const scope: RequestScope = {
      cookie: req.headers.cookie,
      verified,
      standing: new Map(),
      grants: new Map(),
      accounts: new Map(),
      tokens: new Map(),
    };
    if (prefetched) {
      scope.tokens.set(prefetched.id, { found: Promise.resolve(prefetched.found), taken: new Set() });
    }
    return this.#scope.run(scope, async () => {
      try {
        await this.#callback(req, res);
      } finally {
        // A rotation the library began and never finished (it failed between the consume and the
        // new token's save): the old token is consumed still, as the library meant it to be.
        // The answer (an error) has gone out: a failure here is logged, never thrown into it.
        if (scope.consuming !== undefined) {
          await this.deps
            .storage('RefreshToken')
            .consume(scope.consuming)
            .catch((error: unknown) =>
              this.deps.log.warn({ err: error }, 'a refresh token whose rotation failed was not consumed'),
            );
        }
      }
    });
  }

  async interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction> {
    return this.provider.interactionDetails(req, res);
  }

  /**
   * The URL the browser goes to next: the provider resumes the authorization with `result`. A
   * consent carries along the login that came before it in the same authorization request (the
   * library's last submission): without it the resume after the consent finds a requested
   * prompt=login unresolved and sends the person to sign in again, and again.
   */
  async interactionResult(
    req: IncomingMessage,
    res: ServerResponse,
    result: InteractionResults,
  ): Promise<string> {
    return this.provider.interactionResult(req, res, result, {
      mergeWithLastSubmission: result.consent !== undefined,
    });
  }

  /**
   * Logs the hosted session in and answers the URL the browser goes to next: the provider's own
   * session follows the service's. When the interaction began in a provider session that stands
   * for another hosted session (prompt=login, max_age: the person signed in again, which ended the
   * old one), the interaction lets go of that session, as the library does itself when the account
   * changes: the old session is no longer found, and the authorization resumes in a new one
   * standing for this hosted session.
   */
  async logIn(
    req: IncomingMessage,
    res: ServerResponse,
    interaction: Interaction,
    hosted: HostedSession,
  ): Promise<string> {
    const origin = interaction.session?.uid;
    if (origin) {
      const stored = await this.deps.storage('Session').findByUid(origin);
      if (stored?.[HOSTED_SESSION] !== hosted.sessionId) {
        delete (interaction.session as { uid?: string }).uid;
        // The library's own expiry, on its own (real) clock, kept as it was.
        await interaction.save((interaction.exp ?? 0) - Math.floor(Date.now() / 1000));
      }
    }
    const { amr, acr } = authenticationOf(hosted.method, hosted.channel, hosted.ssoConnectionId ?? null);
    return this.interactionResult(req, res, {
      login: {
        accountId: hosted.identityId,
        ts: Math.floor(hosted.signedInAt.getTime() / 1000),
        amr,
        acr,
        remember: true,
        [HOSTED_SESSION]: hosted.sessionId,
      },
    });
  }

  /**
   * Grants what the interaction asks for (after consent, or at once for a first-party client)
   * and answers the grant's id, to be linked to the hosted session.
   */
  async grant(interaction: Interaction): Promise<{ grantId: string; scope: string }> {
    const { prompt, params, session, grantId } = interaction;
    const accountId = session?.accountId;
    if (!accountId) throw new this.#errors.AccessDenied('no signed-in account');
    // A grant that ended since (revoked, its session over) is not reused: a new one is made.
    const grant =
      (grantId ? await this.provider.Grant.find(grantId) : undefined) ??
      new this.provider.Grant({ accountId, clientId: params.client_id as string });
    const details = prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const id = await grant.save();
    return { grantId: id, scope: grant.getOIDCScope() };
  }

  /** The scopes an interaction's consent would add (what a consent screen lists). */
  requestedScopes(interaction: Interaction): string[] {
    const missing = (interaction.prompt.details as { missingOIDCScope?: string[] }).missingOIDCScope;
    return (
      missing ??
      String(interaction.params.scope ?? '')
        .split(' ')
        .filter(Boolean)
    );
  }

  /** Sends the back-channel logout token for one ended grant (oidc-provider signs it). */
  async backchannelLogout(clientId: string, accountId: string, sid: string | null): Promise<void> {
    const client = (await this.provider.Client.find(clientId)) as
      | { backchannelLogoutUri?: string; backchannelLogout(sub: string, sid: string): Promise<void> }
      | undefined;
    if (!client?.backchannelLogoutUri) return;
    await client.backchannelLogout(accountId, sid ?? '');
  }

  #scopeOf(): RequestScope | undefined {
    return this.#scope.getStore();
  }

  /** The hosted session of this request, read once. */
  #hosted(): Promise<HostedSession | undefined> {
    const scope = this.#scopeOf();
    if (!scope) return Promise.resolve(undefined);
    scope.hosted ??= this.deps.hostedSession(scope.cookie);
    return scope.hosted;
  }

  async #afterLogout(ctx: KoaContextWithOIDC): Promise<void> {
    // RP-initiated logout ends the provider's session (and it sends the back-channel logouts of
    // the grants it held); the hosted session it stood for ends with it.
    if (ctx.oidc?.route !== 'end_session_confirm' || ctx.status !== 303) return;
    if (!(ctx.oidc.body as { logout?: string } | undefined)?.logout) return;
    await this.deps.endHostedSession(this.#scopeOf()?.cookie);
    ctx.append('set-cookie', this.deps.clearHostedCookie);
  }

  #adapter(): new (name: string) => Adapter {
    const { deps } = this;
    const self = this;
    return class implements Adapter {
      readonly #store: PayloadStore;
      constructor(readonly name: string) {
        this.#store = deps.storage(name);
      }

      async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
        // The find that claimed it stored it already (#seenBefore): a DPoP proof's jti for the
        // same 300 seconds, written once. A client assertion's is kept until the assertion's own
        // exp, which may be later: that one is written again with its lifetime.
        if (this.name === 'ReplayDetection' && expiresIn <= REPLAY_CLAIM_TTL) return;
        const stored = payload as Record<string, unknown>;
        if (this.name === 'Session' && stored.accountId) stored[HOSTED_SESSION] = self.#standsFor(stored);
        const scope = self.#scopeOf();
        if (this.name === 'RefreshToken' && scope?.consuming !== undefined) {
          // The successor of the refresh token this request consumed: one statement for both.
          const consumedId = scope.consuming;
          scope.consuming = undefined;
          if (await this.#store.rotate(consumedId, id, stored, expiresIn)) return;
          await this.#reused(consumedId);
        }
        await this.#store.upsert(id, stored, expiresIn);
      }

      async find(id: string): Promise<AdapterPayload | undefined> {
        if (this.name === 'Client') return self.#clientMetadata(id);
        if (this.name === 'ReplayDetection') return self.#seenBefore(this.#store, id);
        const scope = self.#scopeOf();
        if (scope && isTokenModel(this.name)) return self.#findToken(this.#store, scope, this.name, id);
        if (scope && this.name === 'Grant' && scope.grants.has(id)) {
          const grant = scope.grants.get(id);
          scope.grants.delete(id);
          return (grant ?? undefined) as AdapterPayload | undefined;
        }
        const payload = await this.#store.find(id);
        if (!payload) return undefined;
        if (this.name === 'Session' && !(await self.#sessionStillHosted(payload))) return undefined;
        return payload as AdapterPayload;
      }

      async findByUid(uid: string): Promise<AdapterPayload | undefined> {
        return (await this.#store.findByUid(uid)) as AdapterPayload | undefined;
      }

      async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
        return (await this.#store.findByUserCode(userCode)) as AdapterPayload | undefined;
      }

      async consume(id: string): Promise<void> {
        const scope = self.#scopeOf();
        if (this.name === 'RefreshToken' && scope && scope.consuming === undefined) {
          // The refresh grant rotates (the only caller of a refresh token's consume): the library
          // stores the successor next, and that statement consumes this one (upsert, rotate).
          // Single use holds: the compare-and-set decides there, before any answer is sent.
          scope.consuming = id;
          return;
        }
        if (await this.#store.consume(id)) return;
        await this.#reused(id);
      }

      /** Lost the compare-and-set of a consume: the grant ends, and the request is refused. */
      async #reused(id: string): Promise<never> {
        // Lost the race for a code or refresh token used twice at once: a reuse, which ends the
        // grant exactly as a reuse found in sequence does.
        const payload = await this.#store.find(id);
        const grantId = payload?.grantId as string | undefined;
        if (grantId) await this.#store.revokeByGrantId(grantId, 'reused');
        throw new self.#errors.InvalidGrant(
          `${this.name === 'RefreshToken' ? 'refresh token' : 'grant'} already used`,
        );
      }

      async destroy(id: string): Promise<void> {
        await this.#store.destroy(id);
      }

      async revokeByGrantId(grantId: string): Promise<void> {
        await this.#store.revokeByGrantId(grantId, 'revoked');
      }
    };
  }

  /**
   * A token, and what the library reads next about it, in one statement: the grant (Grant.find)
   * and the account (findAccount) of this request are then answered from what it read, once each.
   * Nothing outlives the request, so a grant ended or an identity disabled on any instance is
   * refused at the next request, as with a read each.
   */
  async #findToken(
    store: PayloadStore,
    scope: RequestScope,
    model: string,
    id: string,
  ): Promise<AdapterPayload | undefined> {
    let lookup = scope.tokens.get(id);
    if (!lookup || lookup.taken.has(model)) {
      lookup = { found: store.findTokens(id, TOKEN_MODELS), taken: new Set() };
      scope.tokens.set(id, lookup);
    }
    lookup.taken.add(model);
    const found = (await lookup.found).get(model);
    if (!found) return undefined;
    const grantId = grantIdOf(found.payload);
    if (grantId && found.grant !== undefined) scope.grants.set(grantId, found.grant);
    if (found.account) scope.accounts.set(found.account.identityId, found.account.claims);
    return found.payload as AdapterPayload;
  }

  /** The claims of an account that this request's token find read with it, taken once. */
  #accountFound(identityId: string): AccountClaims | undefined {
    const scope = this.#scopeOf();
    const claims = scope?.accounts.get(identityId);
    if (claims) scope?.accounts.delete(identityId);
    return claims;
  }

  /**
   * The provider's session stands for one hosted session: it is found only while the browser's
   * hosted cookie names that very session, live. By id, not by the second it was opened: another
   * sign-in of the same identity within that second is another session (its amr and acr may
   * differ), and is never taken for this one.
   */
  async #sessionStillHosted(payload: Record<string, unknown>): Promise<boolean> {
    if (!payload.accountId) return true;
    const hosted = await this.#hosted();
    const found =
      hosted !== undefined &&
      hosted.identityId === payload.accountId &&
      hosted.sessionId === payload[HOSTED_SESSION];
    if (found && typeof payload.uid === 'string')
      this.#scopeOf()?.standing.set(payload.uid, hosted.sessionId);
    return found;
  }

  /**
   * The hosted session a provider session being saved stands for: the one the login result this
   * request resumes with was made from, or else the one it was found standing for in this request.
   * None otherwise: such a session is never found again.
   */
  #standsFor(payload: Record<string, unknown>): string | undefined {
    const login = this.#requestContext()?.oidc?.result?.login;
    if (login && login.accountId === payload.accountId && typeof login[HOSTED_SESSION] === 'string') {
      return login[HOSTED_SESSION];
    }
    return typeof payload.uid === 'string' ? this.#scopeOf()?.standing.get(payload.uid) : undefined;
  }

  /**
   * The library's replay check (a DPoP proof's or a client assertion's jti) is a find, then a save
   * when nothing was found: two requests carrying the same proof at once, on one instance or two,
   * would both find nothing. Here the find claims the id in the database in one statement, so
   * exactly one of them finds nothing; the other finds the claim and is refused as a replay. The
   * claim is the record; the library's save that follows writes only to keep it longer.
   */
  async #seenBefore(store: PayloadStore, id: string): Promise<AdapterPayload | undefined> {
    // The library's own (real) clock, as its payloads use; its replay window is 300 seconds.
    const iat = Math.floor(Date.now() / 1000);
    const claim = { jti: id, iat, exp: iat + REPLAY_CLAIM_TTL };
    if (await store.claim(id, claim, REPLAY_CLAIM_TTL)) return undefined;
    return ((await store.find(id)) ?? claim) as AdapterPayload;
  }

  /**
   * renderError's page (src/features/oidc/error-page.ts): in the request's language (its
   * ui_locales, else Accept-Language), naming the application when the request named a registered
   * one (the library's resolved client, else the client_id asked for, looked up), with its
   * client_uri as the way back.
   */
  async #errorPage(
    ctx: KoaContextWithOIDC,
    out: { error?: unknown; error_description?: unknown },
    error: unknown,
  ): Promise<string> {
    const params = (ctx.oidc?.params ?? {}) as Record<string, unknown>;
    const query = (ctx.query ?? {}) as Record<string, unknown>;
    const lang = pageLocale(params.ui_locales ?? query.ui_locales, (langs) => ctx.acceptsLanguages(langs));
    const asked = ctx.oidc?.client?.clientId ?? params.client_id ?? query.client_id;
    let client: { name: string; uri?: string } | undefined;
    if (typeof asked === 'string' && asked.length > 0 && asked.length <= 200) {
      const found = await this.deps.findClient(asked).catch(() => undefined);
      if (found) client = { name: found.clientName, ...(found.clientUri ? { uri: found.clientUri } : {}) };
    }
    const { config } = this.deps;
    return errorPage({
      lang,
      error: String(out.error ?? 'server_error'),
      ...(out.error_description ? { description: String(out.error_description) } : {}),
      errorName: (error as Error | undefined)?.name,
      signOut: ctx.path === OIDC_PATHS.endSession || ctx.path.startsWith(`${OIDC_PATHS.endSession}/`),
      ...(client ? { client } : {}),
      brand: config.brand,
      ...(config.accountUi ? { accountUrl: `${config.publicOrigin}${config.accountUi.path}` } : {}),
    });
  }

  /**
   * The metadata the library is handed for a client, built once per client object and secret
   * told: a configured client (OIDC_CLIENTS, the console's) is the same object for the life of the
   * process, so its metadata is built once per process; a registered one is read from the
   * database at every find (OidcService.findClient), a new object each time, so what an operator
   * changes or deletes on any instance holds at the next request and nothing of it is kept here
   * (a WeakMap: the entry goes with the object).
   */
  readonly #metadataOf = new WeakMap<RegisteredClient, Map<string, AdapterPayload>>();

  async #clientMetadata(clientId: string): Promise<AdapterPayload | undefined> {
    const c = await this.deps.findClient(clientId);
    if (!c) return undefined;
    const verified = this.#scopeOf()?.verified;
    // The secret the library is told: the one this request proved, else one nobody knows.
    const secret = verified?.clientId === c.clientId ? verified.secret : this.#unguessable;
    let built = this.#metadataOf.get(c);
    if (!built) {
      built = new Map();
      this.#metadataOf.set(c, built);
    }
    let metadata = built.get(secret);
    if (!metadata) {
      // At most two per client: its own secret (the only one a request proves) and the unguessable.
      metadata = this.#buildClientMetadata(c, secret);
      built.set(secret, metadata);
    }
    return metadata;
  }

  #buildClientMetadata(c: RegisteredClient, secret: string): AdapterPayload {
    // Only client_secret_basic and client_secret_post hold a secret; private_key_jwt holds keys.
    const holdsSecret =
      c.tokenEndpointAuthMethod === 'client_secret_basic' ||
      c.tokenEndpointAuthMethod === 'client_secret_post';
    return {
      client_id: c.clientId,
      client_name: c.clientName,
      ...(holdsSecret ? { client_secret: secret } : {}),
      redirect_uris: c.redirectUris,
      post_logout_redirect_uris: c.postLogoutRedirectUris,
      grant_types: c.grantTypes,
      response_types: c.responseTypes,
      token_endpoint_auth_method: c.tokenEndpointAuthMethod,
      id_token_signed_response_alg: c.idTokenSignedResponseAlg,
      ...(c.userinfoSignedResponseAlg ? { userinfo_signed_response_alg: c.userinfoSignedResponseAlg } : {}),
      // Every ID token carries auth_time (docs/oidc.md, "Claims"), whatever the client registered.
      require_auth_time: true,
      // The library fills a request's missing max_age from it, and the interaction reads max_age.
      ...(c.defaultMaxAge !== undefined ? { default_max_age: c.defaultMaxAge } : {}),
      // The library refuses a request for a scope outside it.
      ...(c.scope !== undefined ? { scope: c.scope } : {}),
      ...(c.jwks ? { jwks: c.jwks } : {}),
      ...(c.jwksUri ? { jwks_uri: c.jwksUri } : {}),
      ...(c.backchannelLogoutUri
        ? { backchannel_logout_uri: c.backchannelLogoutUri, backchannel_logout_session_required: true }
        : {}),
      first_party: c.firstParty,
      require_pkce: c.requirePkce,
      // The library then refuses its token requests without a DPoP proof (RFC 9449 §5.2).
      dpop_bound_access_tokens: c.dpopBoundAccessTokens,
    };
  }

  /**
   * The library's prompts, with one more check on login: a request naming an organization is
   * answered only by a session made through one of that organization's enabled connections (its
   * amr names the connection). Any other session, a password one included, asks for a sign-in
   * (the interaction sends the person to the organization's IdP), and prompt=none answers
   * login_required (docs/oidc.md, "Enterprise sign-in").
   */
  #interactionPolicy() {
    const { Check, base } = this.#policy;
    const policy = base();
    const sso = this.deps.sso;
    policy.get('login')?.checks.add(
      new Check(
        'organization_session',
        'a sign-in through the organization’s identity provider is required',
        async (ctx) => {
          const named = ctx.oidc.params?.[ORGANIZATION_PARAM];
          if (named === undefined) return Check.NO_NEED_TO_PROMPT;
          const session = ctx.oidc.session;
          if (!session?.accountId) return Check.REQUEST_PROMPT;
          const fits = await sessionFitsOrganization(sso, session.amr, String(named));
          return fits ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
        },
      ),
    );
    return policy;
  }

  #configuration(): Configuration {
    const { config } = this.deps;
    const deps = this.deps;
    const errors = this.#errors;
    const self = this;
    return {
      adapter: this.#adapter(),
      clients: [],
      async findAccount(_ctx, sub, token) {
        const found = self.#accountFound(sub) ?? (await deps.account(sub));
        if (!found) return undefined;
        const grantId = grantIdOf(token);
        return {
          accountId: sub,
          async claims(_use, scope) {
            // Read now, not at consent: a changed role or a removed membership is in the next
            // ID token and userinfo answer. Only asked for when the scope was granted.
            const organization =
              grantId && scope.split(' ').includes(ORGANIZATION_SCOPE)
                ? await deps.grantOrganization(grantId, sub)
                : undefined;
            return {
              sub,
              ...(found.email ? { email: found.email.value, email_verified: true } : {}),
              ...(found.phone ? { phone_number: found.phone.value, phone_number_verified: true } : {}),
              ...(found.profile && scope.split(' ').includes('profile')
                ? profileClaims(found.profile, deps.config.publicOrigin)
                : {}),
              ...organization,
            };
          },
        };
      },
      claims: CLAIMS as never,
      scopes: PERSON_SCOPES,
      // On client_credentials the library grants whichever of the scopes above is asked: it has
      // no per-grant scope policy (a client's `scope` list would bound every grant of the client
      // alike). This hook runs for every client_credentials token after client authentication
      // and before the token is stored, so a refusal here is the library's own invalid_scope and
      // nothing is issued (docs/decisions.md, "No person scopes on client_credentials").
      extraTokenClaims: async (ctx, token) => {
        // A person's access token carries the custom_claims hook's claims (shown by introspection).
        if (token.kind === 'AccessToken') {
          const { accountId, clientId, scope } = token as {
            accountId?: string;
            clientId?: string;
            scope?: string;
          };
          if (!accountId || !clientId) return undefined;
          const claims = await this.#customClaims(ctx, {
            identityId: accountId,
            clientId,
            scope: scope ?? '',
          });
          return Object.keys(claims).length > 0 ? claims : undefined;
        }
        if (token.kind !== 'ClientCredentials') return undefined;
        const person = String(token.scope ?? '')
          .split(' ')
          .find((scope) => PERSON_SCOPES.includes(scope));
        if (person) throw new errors.InvalidScope('requested scope is not allowed', person);
        return undefined;
      },
      acrValues: [ACR.singleFactor, ACR.multiFactor],
      responseTypes: ['code'],
      // private_key_jwt: the library checks the signed client assertion against the client's jwks
      // or jwks_uri (RS256 or EdDSA, clientAuthSigningAlgValues), its aud, exp and single use.
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      extraClientMetadata: { properties: ['first_party', 'require_pkce'] },
      extraParams: {
        // Set by the bridge for a `prompt=none` request it let through to an interaction
        // (routes.ts). Its check runs for every request, with or without it (the library calls
        // extraParams validators whatever is present), after the client and redirect_uri were
        // checked and before anything is stored: over the caps is invalid_request by redirect.
        [SILENT_PARAM]: async (ctx) => {
          const over = overCap(Object.entries(ctx.oidc.params ?? {}));
          if (over) throw new this.#errors.InvalidRequest(over);
        },
        // An organization whose IdP must sign the person in (docs/oidc.md, "Enterprise sign-in"):
        // checked after the client and redirect_uri, so its refusal is a redirect to the client.
        [ORGANIZATION_PARAM]: async (_ctx, value) => {
          if (value === undefined) return;
          if (typeof value !== 'string' || !(await deps.sso.routedOrganization(value))) {
            throw new this.#errors.InvalidRequest(UNROUTABLE_ORGANIZATION);
          }
        },
      },
      pkce: {
        // S256 only (the library has no other); a confidential client may opt out (docs/oidc.md).
        required: (_ctx, client) => client.clientAuthMethod === 'none' || client.require_pkce !== false,
      },
      enabledJWA: {
        idTokenSigningAlgValues: ['RS256', 'EdDSA'],
        userinfoSigningAlgValues: ['RS256', 'EdDSA'],
        introspectionSigningAlgValues: ['RS256', 'EdDSA'],
        authorizationSigningAlgValues: ['RS256', 'EdDSA'],
        requestObjectSigningAlgValues: ['RS256', 'EdDSA'],
        clientAuthSigningAlgValues: ['RS256', 'EdDSA'],
      },
      jwks: { keys: deps.signingKeys as never },
      cookies: {
        keys: [deps.cookieKey.toString('base64url')],
        long: { httpOnly: true, sameSite: 'lax', signed: true },
        short: { httpOnly: true, sameSite: 'lax', signed: true },
      },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: false },
        introspection: {
          enabled: true,
          // A token is introspected only by the client it was issued to (the service has no
          // resource-server clients): to any other the answer is {"active":false}, the same bytes
          // as an unknown token, so no sub, sid or scope of another client's grant is learned
          // (docs/decisions.md, "Introspection by the token's own client").
          allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
        },
        revocation: { enabled: true },
        // RFC 9449 (docs/oidc.md, "DPoP"): a proof binds the tokens to the client's key. Every proof
        // carries a nonce of the server's, so its freshness never rests on the client's clock, and
        // any instance checks a nonce another made (one key for all); a jti is refused the second
        // time through the database (the adapter's ReplayDetection).
        dPoP: { enabled: true, nonceSecret: deps.dpopNonceKey, requireNonce: () => true, allowReplay: false },
        clientCredentials: { enabled: true },
        // RFC 8628, for the clients whose grant_types hold its grant (the library refuses the
        // others at /oidc/device/auth). Our pages in place of the library's: the hosted style, two
        // languages, no script, and one answer for every code refused (unknown, expired, used), so
        // the page tells a guesser nothing about which codes exist.
        deviceFlow: {
          enabled: true,
          ...USER_CODE,
          async userCodeInputSource(ctx, form, _out, err) {
            const error: DeviceInputError | undefined =
              err === undefined
                ? undefined
                : (err as { userCode?: string }).userCode !== undefined || err.name === 'NoCodeError'
                  ? 'wrong_code'
                  : err.name === 'AbortedError'
                    ? 'aborted'
                    : 'failed';
            // A refusal is not a page served as asked: 400, so a script tells it apart too.
            if (error) ctx.status = 400;
            ctx.type = 'html';
            ctx.body = deviceInputPage(deviceLocale(ctx), deviceForm(form), error);
          },
          async userCodeConfirmSource(ctx, form, client, _deviceInfo, userCode) {
            ctx.type = 'html';
            ctx.body = deviceConfirmPage(
              deviceLocale(ctx),
              deviceForm(form),
              String(client.clientName ?? client.clientId),
              userCode,
            );
          },
          async successSource(ctx) {
            const client = ctx.oidc.client;
            ctx.type = 'html';
            ctx.body = deviceSuccessPage(
              deviceLocale(ctx),
              String(client?.clientName ?? client?.clientId ?? ''),
            );
          },
        },
        backchannelLogout: { enabled: true },
        resourceIndicators: { enabled: false },
        userinfo: { enabled: true },
        // Only for a client registered with userinfo_signed_response_alg; the others get JSON.
        jwtUserinfo: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          async logoutSource(ctx, form) {
            const client = ctx.oidc.client;
            const name = client ? ` of ${escapeHtml(String(client.clientName ?? client.clientId))}` : '';
            ctx.type = 'html';
            ctx.body = page(
              'Sign out',
              `<h1>Sign out${name}?</h1><p>This signs you out here and in the apps that signed you in through it.</p>${form.replace('</form>', '')}<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Sign out</button><button class="secondary" type="submit" form="op.logoutForm">Stay signed in</button></form>`,
            );
          },
          async postLogoutSuccessSource(ctx) {
            ctx.type = 'html';
            ctx.body = page('Signed out', '<h1>You are signed out</h1><p>You can close this page.</p>');
          },
        },
      },
      ttl: {
        AccessToken: config.lifetimes.accessToken,
        AuthorizationCode: 60,
        ClientCredentials: config.lifetimes.accessToken,
        IdToken: config.oidc.idTokenTtl,
        Interaction: INTERACTION_TTL,
        DeviceCode: DEVICE_CODE_TTL,
        Session: config.lifetimes.session,
        Grant: Math.max(config.lifetimes.session, config.oidc.offlineTtl),
        // A session-bound refresh token lives no longer than its session (the grant's link ends it
        // sooner when the session ends); an offline one until unused this long.
        RefreshToken: (_ctx, token) =>
          token.scopes.has('offline_access') ? config.oidc.offlineTtl : config.lifetimes.session,
      },
      issueRefreshToken: async (_ctx, client, code) =>
        client.grantTypeAllowed('refresh_token') && code.scopes.has('openid'),
      rotateRefreshToken: true,
      // Tokens end with the service's session through the grant's link, not the provider's cookie.
      expiresWithSession: async () => false,
      interactions: {
        url: (_ctx, interaction) => `${OIDC_PATHS.interaction}/${interaction.uid}`,
        policy: this.#interactionPolicy(),
      },
      routes: {
        authorization: OIDC_PATHS.authorization,
        token: '/oidc/token',
        userinfo: '/oidc/userinfo',
        jwks: OIDC_PATHS.jwks,
        revocation: '/oidc/token/revocation',
        introspection: '/oidc/token/introspection',
        end_session: OIDC_PATHS.endSession,
        pushed_authorization_request: '/oidc/request',
        backchannel_authentication: '/oidc/backchannel',
        code_verification: '/oidc/device',
        device_authorization: '/oidc/device/auth',
        registration: '/oidc/reg',
        challenge: '/oidc/challenge',
        credential: '/oidc/credential',
      },
      clientBasedCORS: (_ctx, origin, client) =>
        client.redirectUris?.some((uri) => new URL(uri).origin === origin) ?? false,
      // The provider's only outgoing requests are back-channel logouts (sector identifiers and
      // client metadata documents are off). Their URIs come from the operator alone (dynamic
      // registration is off), so loopback and private addresses are allowed (docs/security.md).
      fetch: (url, options) => globalThis.fetch(url, { ...options, dispatcher: undefined } as RequestInit),
      async renderError(ctx, out, error) {
        ctx.type = 'html';
        ctx.body = await self.#errorPage(ctx, out, error);
      },
    };
  }
}
