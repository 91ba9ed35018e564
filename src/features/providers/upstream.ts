import type { FastifyBaseLogger } from 'fastify';
import { type CryptoKey, importPKCS8, SignJWT } from 'jose';
import * as client from 'openid-client';
import type { Config, IdentityProviderConfig, ProviderPreset } from '../../config.js';

/*
 * The one module that speaks to upstream identity providers by redirect ("Continue with …",
 * docs/providers.md), and the only one importing openid-client: discovery, the authorization URL
 * (PKCE S256, state, nonce), the callback's checks and the code exchange are all the library's.
 * What is written here is each preset's quirks: Google's two issuer spellings, Entra's tenant
 * issuer template and tenant allow-list, Apple's minted client secret and first-callback name,
 * GitHub's OAuth 2 without an ID token. A version bump of openid-client is a change here only.
 *
 * Nothing here logs a code, a token or a claim: a failure is logged by its class and code.
 */

/** The outbound HTTP of every upstream exchange (tests send real issuer hosts to loopback fakes). */
export type OutboundFetch = client.CustomFetch;

/** Who the upstream says signed in. */
export interface UpstreamIdentity {
  /** google/apple/generic: `sub`; microsoft: `${tid}:${oid}`; github: the numeric user id as text. */
  subject: string;
  /** As the provider gives it (not normalised). */
  email: string | null;
  /** Only when the provider asserts it, by each preset's rule (never for a null email). */
  emailVerified: boolean;
  /** apple: only from the first callback's `user` form field. */
  name: string | null;
  /** Only when the provider gives them (`given_name`, `family_name`; apple: the first callback's `user`). */
  givenName?: string;
  familyName?: string;
}

export type UpstreamFailure = 'cancelled' | 'unavailable' | 'refused';

/**
 * `cancelled`: the person said no at the provider. `unavailable`: the provider failed (network,
 * 5xx, an error other than a refusal). `refused`: a check failed (state, PKCE, nonce, the ID token,
 * the tenant), so nobody may be signed in.
 */
export class UpstreamError extends Error {
  constructor(
    readonly reason: UpstreamFailure,
    cause?: unknown,
  ) {
    super(`upstream sign-in ${reason}`, { cause });
    this.name = 'UpstreamError';
  }
}

export interface UpstreamDeps {
  config: Pick<Config, 'identityProviders' | 'publicOrigin' | 'production'>;
  log: FastifyBaseLogger;
  fetch?: OutboundFetch;
}

/** What a flow keeps server-side between the authorization URL and the callback. */
export interface UpstreamChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * An OpenID provider known at run time rather than from configuration: an organization's OpenID
 * connection (docs/sso.md, "OpenID connections"). Discovery, PKCE, nonce, state and the ID token's
 * checks are the same code as a configured generic provider's; `key` names its discovery cache
 * and changes when the issuer, client or secret do.
 */
export interface OpenIdParty {
  key: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string;
  redirectUri: string;
}

/** A party's callback, checked: the ID token's claims (UserInfo's beneath them when the token lacks the email). */
export interface OpenIdClaims {
  claims: Record<string, unknown>;
  identity: UpstreamIdentity;
}

type RedirectProvider = IdentityProviderConfig & {
  redirect: NonNullable<IdentityProviderConfig['redirect']>;
};

/** GitHub is OAuth 2 without discovery: its endpoints are fixed. It sends no `iss`, so the issuer is only a label. */
const GITHUB_SERVER: client.ServerMetadata = {
  issuer: 'https://github.com',
  authorization_endpoint: 'https://github.com/login/oauth/authorize',
  token_endpoint: 'https://github.com/login/oauth/access_token',
};
const GITHUB_API = 'https://api.github.com';
/** Google's discovery says `https://accounts.google.com`; its ID tokens may carry either spelling. */
const GOOGLE_BARE_ISSUER = 'accounts.google.com';
const APPLE_AUDIENCE = 'https://appleid.apple.com';
/** Apple allows a client secret to live six months; a short one limits what a leaked one is worth. */
const APPLE_SECRET_SECONDS = 300;
/** A cached secret is replaced this long before it expires, so one in flight never expires on the way. */
const APPLE_SECRET_MARGIN_SECONDS = 60;
/** A person is waiting on every upstream call. */
const TIMEOUT_SECONDS = 10;
/** Apple says `user_cancelled_authorize` where the others say `access_denied`. */
const CANCELLED = new Set(['access_denied', 'user_cancelled_authorize']);
/** A code the token endpoint will not take (replayed, wrong PKCE verifier, other client): a refusal. */
const REFUSED_GRANT = new Set(['invalid_grant', 'bad_verification_code']);
/** openid-client codes that mean the provider did not answer properly (rather than a failed check). */
const UNAVAILABLE_CODES = new Set([
  'OAUTH_RESPONSE_IS_NOT_CONFORM',
  'OAUTH_RESPONSE_IS_NOT_JSON',
  'OAUTH_PARSE_ERROR',
  'OAUTH_TIMEOUT',
  'OAUTH_ABORT',
  'OAUTH_HTTP_REQUEST_FORBIDDEN',
  'OAUTH_REQUEST_PROTOCOL_FORBIDDEN',
  'OAUTH_MISSING_SERVER_METADATA',
  'OAUTH_INVALID_SERVER_METADATA',
  'OAUTH_UNSUPPORTED_OPERATION',
]);
const MAX_SUBJECT = 255;
const MAX_EMAIL = 320;
const MAX_NAME = 200;

export class UpstreamProviders {
  readonly #providers: Map<string, RedirectProvider>;
  /** Discovery, once per provider: kept after success, dropped after a failure so the next call retries. */
  readonly #configurations = new Map<string, Promise<client.Configuration>>();
  readonly #appleSecrets = new Map<string, { value: string; expiresAt: number }>();
  readonly #appleKeys = new Map<string, Promise<CryptoKey>>();
  /** Google's per-callback configurations share the key set fetched by earlier ones. */
  readonly #jwksCaches = new Map<string, client.ExportedJWKSCache>();

  constructor(private readonly deps: UpstreamDeps) {
    this.#providers = new Map(
      deps.config.identityProviders
        .filter((p): p is RedirectProvider => p.redirect !== undefined)
        .map((p) => [p.name, p]),
    );
  }

  /** Redirect-capable providers (entries with `redirect`), in configuration order. */
  list(): { name: string; displayName: string; preset: ProviderPreset | null }[] {
    return [...this.#providers.values()].map((p) => ({
      name: p.name,
      displayName: p.displayName,
      preset: p.preset ?? null,
    }));
  }

  get(name: string): IdentityProviderConfig | undefined {
    return this.#providers.get(name);
  }

  redirectUri(name: string): string {
    return `${this.deps.config.publicOrigin}/api/v1/providers/${name}/callback`;
  }

  /** Discovery (cached), then the authorization URL. Throws UpstreamError('unavailable'). */
  async authorizationUrl(name: string, checks: UpstreamChecks): Promise<URL> {
    const provider = this.#providers.get(name);
    if (!provider) throw new UpstreamError('unavailable');
    return this.#authorizationUrl(provider, this.redirectUri(name), checks);
  }

  /** The same for a party known at run time (an organization's OpenID connection). */
  async partyAuthorizationUrl(party: OpenIdParty, checks: UpstreamChecks): Promise<URL> {
    return this.#authorizationUrl(this.#partyProvider(party), party.redirectUri, checks);
  }

  /**
   * A party's callback (a GET with the query), every check of complete(): state, PKCE, nonce, the
   * ID token's signature, issuer, audience and times. Throws UpstreamError.
   */
  async partyComplete(party: OpenIdParty, callback: Request, checks: UpstreamChecks): Promise<OpenIdClaims> {
    const provider = this.#partyProvider(party);
    try {
      const parameters = await callbackParameters(provider, callback);
      const current = new URL(party.redirectUri);
      for (const [key, value] of parameters) current.searchParams.append(key, value);
      const configuration = await this.#configuration(provider);
      const claims = await this.#openIdClaims(provider, configuration, current, checks);
      return { claims, identity: identityOf(provider, claims, null) };
    } catch (err) {
      const reason = failureOf(err);
      this.#logFailure(party.key, reason, err);
      throw err instanceof UpstreamError ? err : new UpstreamError(reason, err);
    }
  }

  #partyProvider(party: OpenIdParty): RedirectProvider {
    // One cached discovery per connection: a changed issuer, client or secret replaces it.
    const id = party.key.split('@')[0] as string;
    for (const name of this.#configurations.keys()) {
      if (name !== party.key && name.split('@')[0] === id) this.#configurations.delete(name);
    }
    return {
      name: party.key,
      displayName: party.key,
      issuer: party.issuer,
      redirect: {
        clientId: party.clientId,
        clientSecret: party.clientSecret,
        scopes: party.scopes,
        responseMode: 'query',
      },
    } as RedirectProvider;
  }

  async #authorizationUrl(
    provider: RedirectProvider,
    redirectUri: string,
    checks: UpstreamChecks,
  ): Promise<URL> {
    const name = provider.name;
    try {
      const configuration = await this.#configuration(provider);
      const parameters = new URLSearchParams({
        redirect_uri: redirectUri,
        scope: provider.redirect.scopes,
        state: checks.state,
        code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
      });
      if (provider.preset !== 'github') parameters.set('nonce', checks.nonce);
      if (provider.redirect.responseMode === 'form_post') parameters.set('response_mode', 'form_post');
      return client.buildAuthorizationUrl(configuration, parameters);
    } catch (err) {
      this.#logFailure(name, 'unavailable', err);
      throw err instanceof UpstreamError ? err : new UpstreamError('unavailable', err);
    }
  }

  /**
   * The callback, as a WHATWG Request (GET with the query, or POST with the form for form_post).
   * Only its parameters are read: they are checked against the redirect URI this service sent,
   * whatever host or scheme the request arrived under.
   */
  async complete(name: string, callback: Request, checks: UpstreamChecks): Promise<UpstreamIdentity> {
    const provider = this.#providers.get(name);
    if (!provider) throw new UpstreamError('refused');
    try {
      const parameters = await callbackParameters(provider, callback);
      // Apple's `user` field is not part of the authorization response and is not signed: it is
      // read for the display name only, and kept out of what openid-client checks.
      const appleUser = provider.preset === 'apple' ? parameters.get('user') : null;
      parameters.delete('user');
      const current = new URL(this.redirectUri(name));
      for (const [key, value] of parameters) current.searchParams.append(key, value);
      const configuration = await this.#configuration(provider);
      if (provider.preset === 'github') return await this.#github(configuration, current, checks);
      return await this.#openId(provider, configuration, current, checks, appleUser);
    } catch (err) {
      const reason = failureOf(err);
      this.#logFailure(name, reason, err);
      throw err instanceof UpstreamError ? err : new UpstreamError(reason, err);
    }
  }

  async #openId(
    provider: RedirectProvider,
    configuration: client.Configuration,
    current: URL,
    checks: UpstreamChecks,
    appleUser: string | null,
  ): Promise<UpstreamIdentity> {
    return identityOf(
      provider,
      await this.#openIdClaims(provider, configuration, current, checks),
      appleUser,
    );
  }

  /** The code exchange and the ID token's checks (openid-client's), then the claims. */
  async #openIdClaims(
    provider: RedirectProvider,
    configuration: client.Configuration,
    current: URL,
    checks: UpstreamChecks,
  ): Promise<Record<string, unknown>> {
    const grantChecks: client.AuthorizationCodeGrantChecks = {
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      pkceCodeVerifier: checks.codeVerifier,
      idTokenExpected: true,
    };
    if (provider.preset === 'apple') await this.#appleSecret(provider);
    const tokens =
      provider.preset === 'google'
        ? await this.#googleGrant(provider, configuration, current, grantChecks)
        : await client.authorizationCodeGrant(configuration, current, grantChecks);
    const claims = tokens.claims();
    if (!claims) throw new UpstreamError('refused');
    let userInfo: client.UserInfoResponse | undefined;
    // A provider found by discovery may keep the email out of the ID token (OpenID Connect puts
    // scope-requested claims in the UserInfo response when an access token is issued).
    if (
      provider.preset === undefined &&
      claims.email === undefined &&
      configuration.serverMetadata().userinfo_endpoint
    ) {
      userInfo = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub);
    }
    return { ...userInfo, ...claims };
  }

  /**
   * Google's ID tokens carry `iss` as `https://accounts.google.com` or `accounts.google.com`.
   * openid-client checks the one its configuration names, so the token response is kept: when it
   * was refused for the other spelling only, the same response is checked again, every check
   * included, under a configuration naming that spelling. Nothing is sent to Google twice.
   */
  async #googleGrant(
    provider: RedirectProvider,
    configuration: client.Configuration,
    current: URL,
    checks: client.AuthorizationCodeGrantChecks,
  ): Promise<Awaited<ReturnType<typeof client.authorizationCodeGrant>>> {
    const metadata = { ...configuration.serverMetadata() } as client.ServerMetadata;
    const tokenEndpoint = metadata.token_endpoint ? new URL(metadata.token_endpoint).href : undefined;
    const send = this.#outbound();
    const kept: { response?: Response } = {};
    const first = this.#derived(provider, metadata, async (url, options) => {
      const response = await send(url, options);
      if (options.method === 'POST' && url === tokenEndpoint) kept.response = response.clone();
      return response;
    });
    try {
      return await client.authorizationCodeGrant(first, current, checks);
    } catch (err) {
      const refused = comparisonOf(err);
      const response = kept.response;
      if (!response || refused?.claim !== 'iss' || refused.claims?.iss !== GOOGLE_BARE_ISSUER) throw err;
      // The authorization response's `iss`, if any, was checked against the discovered issuer on
      // the first pass; this pass checks the token response only.
      const bare: client.ServerMetadata = {
        ...metadata,
        issuer: GOOGLE_BARE_ISSUER,
        authorization_response_iss_parameter_supported: undefined,
      };
      const again = new URL(current);
      again.searchParams.delete('iss');
      const second = this.#derived(provider, bare, async (url, options) =>
        options.method === 'POST' && url === tokenEndpoint ? response.clone() : send(url, options),
      );
      try {
        return await client.authorizationCodeGrant(second, again, checks);
      } finally {
        this.#keepJwks(provider.name, second);
      }
    } finally {
      this.#keepJwks(provider.name, first);
      await kept.response?.body?.cancel().catch(() => {});
    }
  }

  /** GitHub: the code exchange, then the user and their emails from the API. */
  async #github(
    configuration: client.Configuration,
    current: URL,
    checks: UpstreamChecks,
  ): Promise<UpstreamIdentity> {
    const tokens = await client.authorizationCodeGrant(configuration, current, {
      expectedState: checks.state,
      pkceCodeVerifier: checks.codeVerifier,
    });
    const user = await this.#githubApi(configuration, tokens.access_token, '/user');
    const id = (user as { id?: unknown } | null)?.id;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0)
      throw new UpstreamError('unavailable');
    // Without the user:email scope the list is refused: the identity then has no email.
    const emails = await this.#githubApi(configuration, tokens.access_token, '/user/emails', true);
    const primary = Array.isArray(emails)
      ? (emails as { email?: unknown; primary?: unknown; verified?: unknown }[]).find(
          (e) => e !== null && typeof e === 'object' && e.primary === true && e.verified === true,
        )
      : undefined;
    const email = text(primary?.email, MAX_EMAIL);
    const { name, login } = user as { name?: unknown; login?: unknown };
    return {
      subject: String(id),
      email,
      emailVerified: email !== null,
      name: text(name, MAX_NAME) ?? text(login, MAX_NAME),
    };
  }

  async #githubApi(
    configuration: client.Configuration,
    accessToken: string,
    path: string,
    optional = false,
  ): Promise<unknown> {
    const response = await client.fetchProtectedResource(
      configuration,
      accessToken,
      new URL(path, GITHUB_API),
      'GET',
      undefined,
      new Headers({ accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' }),
    );
    if (!response.ok) {
      await response.body?.cancel();
      if (optional && response.status < 500) return null;
      throw new UpstreamError('unavailable');
    }
    try {
      return await response.json();
    } catch (err) {
      throw new UpstreamError('unavailable', err);
    }
  }

  #configuration(provider: RedirectProvider): Promise<client.Configuration> {
    let pending = this.#configurations.get(provider.name);
    if (!pending) {
      pending = this.#discover(provider).catch((err: unknown) => {
        this.#configurations.delete(provider.name);
        throw new UpstreamError('unavailable', err);
      });
      this.#configurations.set(provider.name, pending);
    }
    return pending;
  }

  async #discover(provider: RedirectProvider): Promise<client.Configuration> {
    const { redirect } = provider;
    if (provider.preset === 'github') {
      const configuration = new client.Configuration(
        GITHUB_SERVER,
        redirect.clientId,
        undefined,
        client.ClientSecretPost(redirect.clientSecret),
      );
      if (this.deps.fetch) configuration[client.customFetch] = this.deps.fetch;
      configuration.timeout = TIMEOUT_SECONDS;
      return configuration;
    }
    const issuer = new URL(provider.issuer as string);
    // Entra's multi-tenant issuer (`/common/v2.0`) is discovered as `/{tenantid}/v2.0`; openid-client
    // then expects each ID token's `iss` to name the token's own `tid`.
    return client.discovery(issuer, redirect.clientId, undefined, this.#clientAuth(provider), {
      ...(this.deps.fetch ? { [client.customFetch]: this.deps.fetch } : {}),
      execute: this.#extensions(provider),
      timeout: TIMEOUT_SECONDS,
    });
  }

  /** A configuration like the discovered one, over given metadata and outbound fetch (Google's two passes). */
  #derived(
    provider: RedirectProvider,
    metadata: client.ServerMetadata,
    send: OutboundFetch,
  ): client.Configuration {
    const configuration = new client.Configuration(
      metadata,
      provider.redirect.clientId,
      undefined,
      this.#clientAuth(provider),
    );
    configuration[client.customFetch] = send;
    configuration.timeout = TIMEOUT_SECONDS;
    for (const extension of this.#extensions(provider)) extension(configuration);
    const jwks = this.#jwksCaches.get(provider.name);
    if (jwks) client.setJwksCache(configuration, jwks);
    return configuration;
  }

  #keepJwks(name: string, configuration: client.Configuration): void {
    const jwks = client.getJwksCache(configuration);
    if (jwks) this.#jwksCaches.set(name, jwks);
  }

  #extensions(provider: RedirectProvider): ((configuration: client.Configuration) => void)[] {
    // The ID token's signature is checked against the provider's key set too, not only trusted
    // for having come over TLS from the token endpoint.
    const extensions = [client.enableNonRepudiationChecks];
    // Loopback test upstreams speak plain http; production issuers are https (config.ts).
    if (!this.deps.config.production && provider.issuer?.startsWith('http:')) {
      extensions.push(client.allowInsecureRequests);
    }
    return extensions;
  }

  #outbound(): OutboundFetch {
    // openid-client's body types are what fetch takes, though TypeScript's DOM and Node types disagree.
    return this.deps.fetch ?? ((url, options) => fetch(url, options as RequestInit));
  }

  /**
   * Apple: the client secret is an ES256 JWT signed by the .p8 key, minted when needed. Others: the
   * secret in the body when the provider lists that method, else HTTP Basic (the OpenID default).
   */
  #clientAuth(provider: RedirectProvider): client.ClientAuth {
    const { redirect } = provider;
    if (provider.preset === 'apple') {
      return (as, metadata, body, headers) => {
        const secret = this.#appleSecrets.get(provider.name);
        if (!secret) throw new UpstreamError('unavailable');
        client.ClientSecretPost(secret.value)(as, metadata, body, headers);
      };
    }
    const secret = redirect.clientSecret as string;
    const post = client.ClientSecretPost(secret);
    const basic = client.ClientSecretBasic(secret);
    return (as, metadata, body, headers) => {
      const methods = as.token_endpoint_auth_methods_supported;
      (methods?.includes('client_secret_post') ? post : basic)(as, metadata, body, headers);
    };
  }

  /** Mints Apple's client secret unless the cached one lives on for a while. */
  async #appleSecret(provider: RedirectProvider): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    const cached = this.#appleSecrets.get(provider.name);
    if (cached && cached.expiresAt - APPLE_SECRET_MARGIN_SECONDS > now) return;
    const apple = provider.redirect.apple;
    if (!apple) throw new UpstreamError('unavailable');
    let key = this.#appleKeys.get(provider.name);
    if (!key) {
      key = importPKCS8(apple.privateKey, 'ES256');
      this.#appleKeys.set(provider.name, key);
      key.catch(() => this.#appleKeys.delete(provider.name));
    }
    const expiresAt = now + APPLE_SECRET_SECONDS;
    const value = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: apple.keyId })
      .setIssuer(apple.teamId)
      .setSubject(provider.redirect.clientId)
      .setAudience(APPLE_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(expiresAt)
      .sign(await key);
    this.#appleSecrets.set(provider.name, { value, expiresAt });
  }

  /** The class and code of a failure only: its message, cause and response may hold codes, tokens or claims. */
  #logFailure(provider: string, reason: UpstreamFailure, err: unknown): void {
    const inner = (err instanceof UpstreamError && err.cause !== undefined ? err.cause : err) as
      | { name?: unknown; code?: unknown; error?: unknown }
      | undefined;
    const fields = {
      provider,
      reason,
      errClass: typeof inner?.name === 'string' ? inner.name : typeof inner,
      ...(typeof inner?.code === 'string' ? { code: inner.code } : {}),
      // An OAuth error code is a short token from a fixed vocabulary; anything else is left out.
      ...(typeof inner?.error === 'string' && /^[a-z_]{1,64}$/.test(inner.error)
        ? { oauthError: inner.error }
        : {}),
    };
    if (reason === 'cancelled') this.deps.log.info(fields, 'upstream sign-in cancelled');
    else this.deps.log.warn(fields, 'upstream sign-in did not complete');
  }
}

/** The callback's parameters: the query of a GET, or the form of a form_post POST (and nothing else). */
async function callbackParameters(provider: RedirectProvider, callback: Request): Promise<URLSearchParams> {
  if (provider.redirect.responseMode === 'form_post') {
    const type = callback.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (callback.method !== 'POST' || type !== 'application/x-www-form-urlencoded') {
      throw new UpstreamError('refused');
    }
    return new URLSearchParams(await callback.text());
  }
  if (callback.method !== 'GET') throw new UpstreamError('refused');
  return new URL(callback.url).searchParams;
}

/** The identity in checked claims, by each preset's rules. */
function identityOf(
  provider: RedirectProvider,
  claims: Record<string, unknown>,
  appleUser: string | null,
): UpstreamIdentity {
  const email = text(claims.email, MAX_EMAIL);
  const name = text(claims.name, MAX_NAME);
  switch (provider.preset) {
    case 'microsoft': {
      // The object id is stable per person within a tenant; `sub` differs per application.
      const tid = text(claims.tid, 64)?.toLowerCase();
      const oid = text(claims.oid, 64)?.toLowerCase();
      if (!tid || !oid) throw new UpstreamError('refused');
      const tenants = provider.redirect.tenants;
      if (tenants && !tenants.includes(tid)) throw new UpstreamError('refused');
      // Entra lets a tenant admin set any `email`: it counts only when verification is asserted.
      const verified = claims.xms_edov === true || claims.email_verified === true;
      return {
        subject: `${tid}:${oid}`,
        email,
        emailVerified: email !== null && verified,
        name,
        ...partsOf(claims.given_name, claims.family_name),
      };
    }
    case 'apple': {
      const verified = claims.email_verified === true || claims.email_verified === 'true';
      return {
        subject: subjectOf(claims),
        email,
        emailVerified: email !== null && verified,
        ...appleName(appleUser),
      };
    }
    default:
      return {
        subject: subjectOf(claims),
        email,
        emailVerified: email !== null && claims.email_verified === true,
        name: name ?? joinNames(claims.given_name, claims.family_name),
        ...partsOf(claims.given_name, claims.family_name),
      };
  }
}

function subjectOf(claims: Record<string, unknown>): string {
  const subject = text(claims.sub, MAX_SUBJECT);
  if (!subject) throw new UpstreamError('refused');
  return subject;
}

/** Apple's `user` form field (first authorization only): `{ "name": { "firstName", "lastName" } }`. */
function appleName(field: string | null): Pick<UpstreamIdentity, 'name' | 'givenName' | 'familyName'> {
  if (!field) return { name: null };
  try {
    const user = JSON.parse(field) as { name?: { firstName?: unknown; lastName?: unknown } } | null;
    const { firstName, lastName } = user?.name ?? {};
    return { name: joinNames(firstName, lastName), ...partsOf(firstName, lastName) };
  } catch {
    return { name: null };
  }
}

/** The given and family names, each only when the provider gave one. */
function partsOf(given: unknown, family: unknown): Pick<UpstreamIdentity, 'givenName' | 'familyName'> {
  const givenName = text(given, MAX_NAME);
  const familyName = text(family, MAX_NAME);
  return { ...(givenName ? { givenName } : {}), ...(familyName ? { familyName } : {}) };
}

function joinNames(first: unknown, last: unknown): string | null {
  const parts = [text(first, MAX_NAME), text(last, MAX_NAME)].filter((p): p is string => p !== null);
  return parts.length ? text(parts.join(' '), MAX_NAME) : null;
}

function text(value: unknown, max: number): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed.length > 0 && trimmed.length <= max ? trimmed : null;
}

/** A failed claim or attribute comparison's details, as openid-client reports them. */
function comparisonOf(err: unknown): { claim?: unknown; claims?: Record<string, unknown> } | undefined {
  if (!(err instanceof client.ClientError) || err.code !== 'OAUTH_JWT_CLAIM_COMPARISON_FAILED')
    return undefined;
  const detail = (err.cause as { cause?: unknown } | undefined)?.cause;
  return typeof detail === 'object' && detail !== null ? (detail as { claim?: unknown }) : undefined;
}

function failureOf(err: unknown): UpstreamFailure {
  if (err instanceof UpstreamError) return err.reason;
  if (err instanceof client.AuthorizationResponseError) {
    return CANCELLED.has(err.error) ? 'cancelled' : 'unavailable';
  }
  if (err instanceof client.ResponseBodyError)
    return REFUSED_GRANT.has(err.error) ? 'refused' : 'unavailable';
  if (err instanceof client.WWWAuthenticateChallengeError) return 'unavailable';
  if (err instanceof client.ClientError) {
    // No code: openid-client wrapped something unexpected (the outbound fetch failing, say).
    if (!err.code || UNAVAILABLE_CODES.has(err.code)) return 'unavailable';
    // GitHub answers a bad code with 200 and an error body, which openid-client reports as an
    // invalid token response.
    const body = (
      (err.cause as { cause?: unknown } | undefined)?.cause as { body?: { error?: unknown } } | undefined
    )?.body;
    if (err.code === 'OAUTH_INVALID_RESPONSE' && typeof body?.error === 'string') {
      return REFUSED_GRANT.has(body.error) ? 'refused' : 'unavailable';
    }
    return 'refused';
  }
  // openid-client's argument checks (a malformed callback) are TypeErrors with a code; a network
  // failure is fetch's own TypeError.
  if (err instanceof TypeError && String((err as { code?: unknown }).code).startsWith('ERR_INVALID_ARG')) {
    return 'refused';
  }
  return 'unavailable';
}
