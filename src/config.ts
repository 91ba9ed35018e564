import { createPublicKey, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { accentTheme, type Theme } from './platform/colour.js';
import { purposeKeys } from './platform/crypto/keys.js';
import { proxyList } from './platform/rate-limit/address.js';

/** A configuration error names the variable; start-up prints its message alone and exits 1. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`invalid configuration: ${variable} ${reason}`);
  }
}

export type CodeFormat = 'numeric' | 'alphabetic' | 'alphanumeric';
export type TotpAlgorithm = 'SHA1' | 'SHA256' | 'SHA512';

export interface RateLimitSetting {
  max: number;
  windowSeconds: number;
}

/** An operator's API key as configured: its name (the audit actor) and the SHA-256 of the key. */
export interface AdminKey {
  name: string;
  /** 32 bytes: SHA-256 of the raw key; the raw key never sits in configuration. */
  hash: Buffer;
}

export interface WebAuthnConfig {
  /** The relying party id: a registrable domain every origin is on (or `localhost`). */
  rpId: string;
  rpName: string;
  /** The exact origins a browser may assert from (clientDataJSON.origin). */
  origins: string[];
}

/*
 * The environment is described by one TypeBox schema and checked by Ajv. Every variable carries
 * its `refusal`: the words after its name in the one line start-up prints when Ajv rejects it.
 * Integers are coerced from text (and only integers: the JSON inside IDENTITY_PROVIDERS and
 * ACCESS_TOKEN_SIGNING_KEY is checked by a second, non-coercing instance). An empty variable
 * counts as unset.
 */

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, allErrors: false, verbose: true, strict: true });
  ajv.addKeyword('refusal');
  ajv.addKeyword('shown');
  return ajv;
}
const jsonAjv = makeAjv(false);
const envAjv = makeAjv(true);

/** An origin is scheme://host[:port] with nothing after it; no wildcard. */
export function parseOrigin(entry: string): string | null {
  if (entry.includes('*')) return null;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password || url.search || url.hash) return null;
  if (entry.replace(/\/$/, '') !== url.origin) return null;
  return url.origin;
}

function absoluteUrl(value: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** No user name, password or fragment: nothing a link or an image request should carry. */
function plainUrl(value: string): boolean {
  const url = new URL(value);
  return !url.username && !url.password && !value.includes('#');
}

/** A format holding JSON text that must match `schema`. */
function jsonText(schema: TSchema, also: (value: never) => boolean = () => true) {
  let check: ValidateFunction | undefined;
  return (text: string): boolean => {
    check ??= jsonAjv.compile(schema); // on first use, once every format is registered
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return false;
    }
    return check(value) && also(value as never);
  };
}

const PrivateEd25519Jwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  d: Type.String(),
});

const FORMATS: Record<string, (value: string) => boolean> = {
  'http-url': (v) => absoluteUrl(v, ['http:', 'https:']),
  'postgres-url': (v) => v === 'memory://' || absoluteUrl(v, ['postgres:', 'postgresql:']),
  'redis-url': (v) => absoluteUrl(v, ['redis:', 'rediss:']),
  'smtp-url': (v) => absoluteUrl(v, ['smtp:', 'smtps:']),
  origin: (v) => parseOrigin(v) !== null,
  'origin-list': (v) => v.split(',').every((entry) => parseOrigin(entry.trim()) !== null),
  'base64-32-bytes': (v) => {
    const bytes = Buffer.from(v, 'base64');
    return bytes.length === 32 && bytes.toString('base64').replace(/=+$/, '') === v.replace(/=+$/, '');
  },
  'at-least-32-bytes': (v) => Buffer.byteLength(v, 'utf8') >= 32,
  'proxy-list': (v) => proxyList(v) !== null,
  'private-ed25519-jwk': jsonText(PrivateEd25519Jwk),
  'admin-keys': (v) => adminKeys(v) !== null,
  'image-url': (v) => absoluteUrl(v, ['http:', 'https:']) && plainUrl(v),
  'support-url': (v) => absoluteUrl(v, ['https:', 'mailto:']) && plainUrl(v),
  'json-array': (v) => {
    try {
      return Array.isArray(JSON.parse(v));
    } catch {
      return false;
    }
  },
};
for (const ajv of [jsonAjv, envAjv]) {
  for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
}

/*
 * Each variable is declared once, below: its schema, its default, its refusal and its description.
 * `docs/configuration.md` is generated from these declarations (`npm run config:docs`, checked by
 * the lint), and `Config` is inferred from `configFrom`, the one place each value is mapped.
 * `shown` is the default as the documentation states it, where the schema's own default is computed
 * or absent.
 */
interface Described {
  description: string;
  shown?: string;
}
const integer = (def: number, minimum: number, maximum: number, doc: Described) =>
  Type.Integer({
    default: def,
    minimum,
    maximum,
    refusal: `must be an integer from ${minimum} to ${maximum}`,
    ...doc,
  });
const oneOf = <T extends string>(def: T, allowed: readonly T[], doc: Described) =>
  Type.Unsafe<T>({
    type: 'string',
    enum: allowed,
    default: def,
    refusal: `must be one of ${allowed.join(', ')}`,
    ...doc,
  });
const text = (def: string, doc: Described) => Type.String({ default: def, ...doc });
const formatted = (format: string, refusal: string, doc: Described) =>
  Type.Optional(Type.String({ format, refusal, ...doc }));
const rate = (def: string, doc: Described) =>
  Type.String({
    default: def,
    pattern: '^0*[1-9][0-9]{0,8}/0*[1-9][0-9]{0,8}$',
    refusal: 'must be <count>/<seconds> with both at least 1',
    ...doc,
  });

const ARGON2_PRODUCTION_FLOOR_KIB = 19456;

/** The refusal of OTEL_EXPORTER_OTLP_ENDPOINT, also given by tracing, which reads it before the rest. */
export const NOT_A_COLLECTOR = 'must be the http:// or https:// URL of an OTLP/HTTP collector';

export const Environment = Type.Object(
  {
    NODE_ENV: text('development', {
      description:
        '`production` turns off the development outbox and requires `SECRETS_KEY` and `PUBLIC_ORIGIN`',
    }),
    HOST: text('127.0.0.1', { description: 'address the API listens on' }),
    PORT: integer(3000, 0, 65535, { description: 'port the API listens on' }),
    DATA_DIR: text('./data', {
      description: 'embedded database, development outbox (`outbox.jsonl`), generated development key',
    }),
    DATABASE_URL: formatted('postgres-url', 'must be an absolute URL using postgres: or postgresql:', {
      description:
        '`postgres://…` for a PostgreSQL server (pooled, 20 connections); `memory://` for an in-memory embedded database',
      shown: 'embedded PGlite persisted in `DATA_DIR/pgdata`',
    }),
    REDIS_URL: formatted('redis-url', 'must be an absolute URL using redis: or rediss:', {
      description: '`redis://…`: rate-limit counters shared by every instance',
      shown: 'in-process counters',
    }),
    PUBLIC_ORIGIN: formatted('origin', 'must be an absolute origin', {
      description:
        "the service's own origin; the access token's `iss` and `aud`, one value for every instance",
      shown: 'required in production; `http://HOST:PORT` outside it',
    }),
    CORS_ORIGINS: formatted(
      'origin-list',
      'entries must be absolute origins without path, query, fragment or wildcard',
      {
        description:
          'comma-separated absolute origins (no path, query, fragment or `*`) allowed cross-origin; credentials are never allowed; `ETag` and `X-Request-Id` are exposed',
      },
    ),
    SECRETS_KEY: formatted('base64-32-bytes', 'must be 32 bytes in base64', {
      description:
        '32 bytes in base64. Every use goes through its own key derived by HMAC-SHA256 with a named purpose (`purposeKeys` in `src/platform/crypto/keys.ts`): sealing TOTP secrets and generated signing keys (AES-256-GCM), the audit seals, the code hashes, the guess-budget subjects, the organization invitation tokens, the OpenID Provider cookies and DPoP nonces, the cursor key and the key check. The first start stores a key check; a start under another key stops. Cannot be rotated yet (see [operations](operations.md#key-rotation))',
      shown:
        'required in production; outside production generated once into `DATA_DIR/secrets.key` at start-up',
    }),
    CURSOR_SIGNING_KEY: formatted('at-least-32-bytes', 'must be at least 32 bytes', {
      description: 'HMAC-SHA256 key (at least 32 bytes) for pagination cursors',
      shown: 'derived from `SECRETS_KEY`',
    }),
    CURSOR_KEY_ID: Type.String({
      default: 'k1',
      pattern: '^[A-Za-z0-9_-]{1,32}$',
      refusal: 'must be 1 to 32 characters of A-Z a-z 0-9 _ -',
      description: 'key id for pagination cursors (change it with the key)',
    }),
    ACCESS_TOKEN_SIGNING_KEY: formatted('private-ed25519-jwk', 'must be a private Ed25519 JWK in JSON', {
      description: 'private Ed25519 JWK (JSON) that signs access tokens',
      shown: 'generated at first start and kept (sealed) in the database',
    }),
    SMTP_URL: formatted('smtp-url', 'must be an absolute URL using smtp: or smtps:', {
      description: 'email channel (`smtp://` or `smtps://`)',
    }),
    MAIL_FROM: text('Identity <no-reply@localhost>', { description: 'sender of every email' }),
    SMS_WEBHOOK_URL: formatted('http-url', 'must be an absolute URL using http: or https:', {
      description: 'SMS gateway: the service POSTs `{ "to", "text" }`; any 2xx is delivered',
    }),
    IDENTITY_PROVIDERS: formatted('json-array', 'must be a JSON array of provider objects', {
      description:
        'JSON array of upstream identity providers. Each has a distinct `name` (`[a-z0-9][a-z0-9_-]{0,62}`). ID-token sign-in: `issuer`, `audience`, `jwksUri` or `jwks`. Redirect sign-in ("Continue with …"): `clientId`, `clientSecret`, `scopes`, `displayName`, `preset` (`google`, `microsoft`, `apple`, `github`, or none for discovery from `issuer`), `autoLink` (`off` or `verified_email`), `signUp`, and `tenants` (Microsoft) or `teamId`, `keyId`, `privateKey` (Apple); one entry may serve both. Issuers are `https` in production. An invalid entry stops start-up with a line naming it. See [Providers](providers.md)',
    }),
    OIDC_CLIENTS: formatted('json-array', 'must be a JSON array of client metadata objects', {
      description:
        "JSON array of the OpenID Provider's clients, in RFC 7591 and OpenID Connect Registration names: `client_id`, `client_secret`, `redirect_uris`, `post_logout_redirect_uris`, `grant_types`, `response_types`, `token_endpoint_auth_method` (`private_key_jwt` with `jwks` or `jwks_uri`), `backchannel_logout_uri`, `client_name`, `logo_uri`, `client_uri`, `policy_uri`, `tos_uri`, `contacts`, `scope`, `default_max_age`, `require_auth_time`, `id_token_signed_response_alg`, `userinfo_signed_response_alg`, `dpop_bound_access_tokens`, plus `first_party` and `require_pkce` (see [OpenID Provider](oidc.md#clients)). An invalid entry or an unknown field stops start-up with a line naming it",
      shown: 'none (clients can also be registered through the admin API)',
    }),
    OIDC_OFFLINE_TTL: integer(2592000, 3600, 31536000, {
      description:
        'seconds an `offline_access` refresh token lives without use; each use rotates it and starts the time again. Signing out everywhere (the epoch) still ends it',
    }),
    OIDC_ID_TOKEN_TTL: integer(3600, 60, 86400, { description: 'seconds an ID token is valid' }),
    OIDC_SWEEP_SECONDS: integer(2, 1, 60, {
      description:
        'seconds between the sweeps that end the OpenID Provider grants of ended sessions and send their back-channel logouts (refresh, introspection and userinfo refuse them at once regardless)',
    }),
    VERIFICATION_CODE_FORMAT: oneOf<CodeFormat>('numeric', ['numeric', 'alphabetic', 'alphanumeric'], {
      description: 'out-of-band codes: `numeric`, `alphabetic` or `alphanumeric`',
    }),
    VERIFICATION_CODE_LENGTH: integer(6, 6, 12, { description: 'out-of-band code length, 6..12' }),
    TOTP_ALGORITHM: oneOf<TotpAlgorithm>('SHA1', ['SHA1', 'SHA256', 'SHA512'], {
      description: 'TOTP algorithm at enrolment; an enrolled factor keeps its own',
    }),
    TOTP_DIGITS: integer(6, 6, 8, { description: 'TOTP digits at enrolment, 6..8' }),
    TOTP_PERIOD: integer(30, 15, 120, { description: 'TOTP period at enrolment, 15..120 seconds' }),
    RATE_LIMIT_SENDS_A_MESSAGE: rate('5/900', {
      description:
        "`<count>/<seconds>` per client address and route on POST /sign-ups, POST /password-recoveries and POST /sign-in-methods, counting only the requests that send a message (a recovery start counts whenever it answers 201, known address or not); typos, unusable addresses and `409` refusals send nothing and spend nothing of it, but every request to these routes also counts against `RATE_LIMIT_ANSWERS_A_CHALLENGE` per client address, which bounds asking whether addresses are taken. Counted in the database, in the transaction that sends, so concurrent requests at the limit cannot all send. The same count and window apply per destination, in the database: every code sent to one address or number counts against a window of that destination, whichever client asked: recovery starts against one of their own (counted whether or not an account holds the address, so its 429 comes at the same count for both), sign-up, sign-in-method and step-up codes and invitations against the other; an email counts as its mailbox (`+tag` dropped, Gmail dots folded). Past it a request answers 429 with `Retry-After` and sends nothing. Notices (new sign-ins, security changes) never count against it and are never held back by it, since strangers' requests can spend it: they have a bound of their own per identity (see `SIGN_IN_NOTICES`). A step-up that sends a code also counts per identity and per address. See [API](api.md#messages-per-destination)",
    }),
    RATE_LIMIT_ANSWERS_A_CHALLENGE: rate('10/60', {
      description:
        'per client address on POST /sign-ups/confirmations and POST /sign-ins/second-factors (and other code-answering routes), and on `POST /oidc/device`, where a person types a device user code (see [OpenID Provider](oidc.md#device-authorization-grant))',
    }),
    RATE_LIMIT_PROVES_A_PASSWORD: rate('10/60', {
      description: 'per client address on POST /sign-ins and POST /sign-ins/renewals',
    }),
    RATE_LIMIT_ACCOUNT_EXPORTS: rate('5/3600', { description: 'per client address on GET /account/export' }),
    RATE_LIMIT_OIDC_CLIENTS: rate('600/60', {
      description:
        "per client address on the OpenID Provider's client-authenticated endpoints (token, introspection, revocation, pushed authorization requests), each counted on its own; a relying party's server refreshes and introspects from one address. Wrong client secrets are also held by the client's guess budget (`RATE_LIMIT_GUESSES`)",
    }),
    // One sign-in into an app is one authorization request (two when the app tries prompt=none
    // first); 60 a minute leaves room for a household or an office behind one address while a
    // flood stores at most 60 interactions a minute from it (docs/decisions.md).
    RATE_LIMIT_OIDC_AUTHORIZATIONS: rate('60/60', {
      description:
        "per client address on the OpenID Provider's browser endpoints, `GET`/`POST /oidc/auth` (authorization) and `GET`/`POST /oidc/session/end` (RP-initiated logout), each counted on its own; a `POST` counts, and so does the `GET` it is redirected to. Past it `429` with `Retry-After` and an HTML page, never a redirect to the app. See [OpenID Provider](oidc.md#limits)",
    }),
    // Default: ten free failures, then 1, 2, 4 ... seconds up to twelve hours between attempts (the
    // bound this keeps on guessing a 6-digit code, ten sent codes live at once included, is in
    // docs/security.md "The guessing bound").
    RATE_LIMIT_GUESSES: Type.String({
      default: `10/${12 * 3600}`,
      pattern: '^0*[1-9][0-9]{1,8}/0*[1-9][0-9]{0,8}$',
      refusal: 'must be <free failures>/<longest delay in seconds> with at least 10 free failures',
      description:
        '`<free failures>/<longest delay in seconds>`: per-subject guess budgets (per identity for step-up, enrolment, sign-in-method confirmations and second-factor sign-ins; per identifier and address prefix for passwords; per identifier for sign-up and recovery codes). Past the free failures each attempt waits 1, 2, 4 … seconds up to the longest delay; an early attempt is 429 with `Retry-After`, right or wrong, unchecked; a success resets, and a count untouched for thirty longest delays is forgotten. At least 10 free failures. See [security](security.md) for the bound',
    }),
    TRUST_PROXY: formatted(
      'proxy-list',
      'must be a comma-separated list of proxy addresses or CIDR ranges (a hop count or true is not accepted)',
      {
        description:
          'comma-separated addresses or CIDR ranges of the proxies whose `X-Forwarded-For` is honoured; a hop count, `true` or any unusable entry stops start-up',
        shown: 'none: the socket address is the client',
      },
    ),
    LOG_LEVEL: oneOf('info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      description:
        '`fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`. At `info`: one access line per request (request id, method, route pattern, status, duration in ms, client address; never headers, bodies or query values) plus errors; `debug` adds a line when each request arrives. Lines go to stdout through an asynchronous destination, flushed at shutdown and on a fatal error',
    }),
    ACCESS_TOKEN_TTL: integer(900, 60, 86400, { description: 'access-token lifetime, seconds' }),
    SESSION_TTL: integer(30 * 86400, 300, 365 * 86400, {
      description: 'absolute session lifetime, fixed at sign-in, seconds',
      shown: '`2592000` (30 days)',
    }),
    SECOND_FACTOR_TICKET_TTL: integer(300, 60, 3600, {
      description: 'second-factor ticket lifetime, seconds',
    }),
    CHALLENGE_TTL: integer(900, 60, 86400, { description: 'out-of-band challenge lifetime, seconds' }),
    ELEVATION_TTL: integer(300, 30, 3600, { description: 'elevation-token lifetime, seconds' }),
    ACCOUNT_LOCK_TTL: integer(900, 60, 86400, {
      description: 'how long the identity-wide lock lasts once tripped, seconds',
    }),
    ARGON2_MEMORY_KIB: integer(ARGON2_PRODUCTION_FLOOR_KIB, 8, 1048576, {
      description: `Argon2id memory cost (t=2, p=1); production refuses less than ${ARGON2_PRODUCTION_FLOOR_KIB}`,
    }),
    // One core stays free for the event loop and the database driver.
    ARGON2_CONCURRENCY: integer(Math.max(1, availableParallelism() - 1), 1, 256, {
      description:
        'Argon2id hashes or verifications running at once; the rest wait in order (memory-hard hashing in parallel beyond the spare cores lowers total throughput and starves the event loop)',
      shown: 'cores − 1, at least 1',
    }),
    ARGON2_MAX_WAIT_MS: integer(3000, 100, 600000, {
      description:
        'load shedding: a sign-in, sign-up or password route whose Argon2id work would wait longer than this (queue length at the measured pace) answers 503 `service.unavailable` with `Retry-After` at once, before writing anything',
    }),
    SHUTDOWN_TIMEOUT_MS: integer(10000, 0, 600000, {
      description: 'how long SIGTERM waits for in-flight requests before exiting 1',
    }),
    AUDIT_HEAD_LOG_SECONDS: integer(3600, 0, 86400, {
      description:
        'how often the audit head (sequence, seal, head seal and the `anchor` that `audit:verify --expect-head` takes) is written to the log, to anchor the chain outside the database; also once at start-up; `0` never',
    }),
    NOTIFY_TIMEOUT_MS: integer(10000, 100, 120000, {
      description: 'SMTP connection/greeting/socket timeout and webhook total timeout',
    }),
    METRICS_PORT: integer(0, 0, 65535, {
      description:
        "port of a separate listener serving Prometheus text at `GET /metrics` (see [operations](operations.md#metrics)); never served on the API's port; `0` off (every metric call is then a no-op)",
      shown: '`0` (off)',
    }),
    // Loopback by default, like ADMIN_HOST: the metrics name routes, rates and refusals, which are for
    // the operator, not for whoever reaches HOST.
    METRICS_HOST: text('127.0.0.1', {
      description:
        'address the metrics listener binds; keep it private (set it to reach the metrics from a scraper on another host)',
    }),
    WEBAUTHN_RP_ID: Type.Optional(
      Type.String({
        pattern: '^(localhost|([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63})$',
        refusal: 'must be a lower-case domain name (no scheme, port or path), or localhost',
        description:
          "passkeys' relying party id: the registrable domain every origin is on (`example.com`, or `localhost`); no scheme, port or path. Browsers refuse an IP address as an RP ID, so with the default `PUBLIC_ORIGIN` (`http://127.0.0.1:3000`) set `PUBLIC_ORIGIN=http://localhost:3000` to try passkeys in a browser",
        shown: 'outside production: the host of `PUBLIC_ORIGIN`; production: unset (passkeys off)',
      }),
    ),
    WEBAUTHN_RP_NAME: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        refusal: 'must be 1 to 64 characters',
        description: 'the name authenticators show, 1..64 characters',
        shown: 'outside production: `Identity`',
      }),
    ),
    WEBAUTHN_ORIGINS: Type.Optional(
      Type.String({
        description:
          'comma-separated exact origins a passkey may be used from, each on `WEBAUTHN_RP_ID` (the host itself or a subdomain); an invalid entry stops start-up with a line naming it. In production passkeys are on only when all three `WEBAUTHN_` variables are set; setting some but not all stops start-up',
        shown: 'outside production: `PUBLIC_ORIGIN`',
      }),
    ),
    ORGANIZATION_CREATION: oneOf('anyone', ['anyone', 'operators'], {
      description:
        '`anyone` or `operators`: whether any signed-in identity with a verified identifier may create an organization (`POST /api/v1/organizations`), or only the operators (that route then answers `403 organization.creation_disabled`). See [organizations](organizations.md)',
    }),
    ORGANIZATION_ROLES: formatted('json-array', 'must be a JSON array of role objects', {
      description:
        'JSON array of operator-defined organization roles beside the built-in `owner`, `admin` and `member`: `[{"name":"billing","permissions":["billing:read","billing:write"]}]`. A `name` is `[a-z][a-z0-9_-]{1,31}` and not a built-in name; `permissions` is a list of 0 to 64 distinct `[a-z0-9_:.-]{1,64}`. An invalid entry stops start-up with a line naming it. See [organizations](organizations.md#roles-and-permissions)',
      shown: 'none (the built-in roles only)',
    }),
    ORGANIZATION_INVITATION_TTL_SECONDS: integer(604800, 3600, 30 * 86400, {
      description:
        'seconds an organization invitation stays acceptable (7 days by default); a new invitation to the same address replaces the pending one. See [organizations](organizations.md#invitations)',
    }),
    SIGN_IN_NOTICES: oneOf('on', ['on', 'off'], {
      description:
        "`on` or `off`: after a sign-in from a device and address prefix the identity has not used in 90 days, a message to its first verified identifier a channel reaches, no link in it. Never dropped, and never counted against the per-destination limit of `RATE_LIMIT_SENDS_A_MESSAGE` (which strangers can spend): only the identity's own sign-ins spend its bound, one message per 15 minutes, the first at once and later ones in the window coalesced into one message when it ends (see [API](api.md#4-new-sign-in-notices) and [security](security.md#notices))",
    }),
    SECURITY_NOTICES: oneOf('on', ['on', 'off'], {
      description:
        "`on` or `off`: a message to every verified identifier (and to an identifier just removed) after a change an attacker would make: password, authenticator, passkey, recovery codes, identifiers, linked providers; no link in it, never held back by the per-destination limit, the first change at once and later changes within its 15 minutes coalesced into one message; a window of its own, apart from the new-sign-in notices' (see [security](security.md#notices))",
    }),
    ACCOUNT_UI: oneOf('on', ['on', 'off'], {
      description:
        '`on` or `off`: the hosted account UI (sign-up, sign-in, devices, security) served at `ACCOUNT_UI_PATH`, bundled in memory from `ui/` at start-up (see [security](security.md))',
    }),
    // A path of its own outside /api/ (the API's cache and CORS policies are not the UI's).
    ACCOUNT_UI_PATH: Type.String({
      default: '/account/',
      pattern: '^/(?!api/)([A-Za-z0-9._~-]+/)+$',
      refusal: 'must be an absolute path of letters, digits . _ ~ - segments ending with /, outside /api/',
      description:
        'where the account UI is served: an absolute path of `A-Z a-z 0-9 . _ ~ -` segments ending with `/`, outside `/api/`',
    }),
    // The brand: the account pages' header, title and theme; the name is the product's name for any
    // page or message the service shows a person.
    BRAND_NAME: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[^\\s\\p{Cc}]([^\\p{Cc}]*[^\\s\\p{Cc}])?$',
        refusal: 'must be 1 to 64 characters without control characters or spaces at either end',
        description:
          "the product's name: beside the logo in the account pages' header and after each page's title (`Sign in · Acme`); also the name other pages and messages of the service use for it",
        shown: '`Your account` (the account pages say it in their language)',
      }),
    ),
    BRAND_LOGO_URL: formatted('image-url', 'must be an absolute http(s) URL without user name or fragment', {
      description:
        "the logo's absolute URL (an image ~32 px tall; SVG or PNG), shown left of the name in the header. `https` in production (`http` only outside it). Its origin, and only that origin, is added to the pages' `img-src` (see [security](security.md))",
      shown: 'none (the name alone)',
    }),
    BRAND_ACCENT_COLOR: Type.String({
      default: '#1d4ed8',
      pattern: '^#[0-9a-fA-F]{6}$',
      refusal: 'must be a colour written #rrggbb',
      description:
        "`#rrggbb`: links, the primary button and the focus ring. It is used as given in the light theme, so it must reach 4.5:1 with the button's white text and the light page (WCAG AA); a lighter colour stops start-up with a line naming a darker shade that would pass. The dark theme's accent is derived: the least lightening of it that reaches 4.5:1 on the dark page",
    }),
    BRAND_SUPPORT_URL: formatted('support-url', 'must be an absolute https: or mailto: URL', {
      description:
        'where people get help (`https://…` or `mailto:…`): a "Get help" link in the footer of every account page',
      shown: 'none (no link)',
    }),
    ADMIN_PORT: integer(0, 0, 65535, {
      description:
        "port of the operators' listener serving `/admin/v1` only (see [admin](admin.md)); never the public port; must differ from `PORT` and `METRICS_PORT`; `0` off",
      shown: '`0` (off)',
    }),
    ADMIN_HOST: text('127.0.0.1', { description: "address the operators' listener binds; keep it private" }),
    ADMIN_API_KEYS: formatted(
      'admin-keys',
      'must be a comma-separated list of name:sha256-hex (64 hex digits) with distinct names of a-z 0-9 . _ -',
      {
        description:
          'comma-separated `name:sha256-hex` (64 hex digits) entries, names distinct (`[a-z0-9][a-z0-9._-]{0,62}`), made by `npm run admin:key -- NAME`; the name is the audit actor (`admin:NAME`); removing an entry revokes its key. Required when `ADMIN_PORT` is set',
      },
    ),
    // Read by src/platform/trace/tracing.ts before anything else loads (it must hook node:http and
    // pg first); declared here too, so they are checked and documented with the rest.
    OTEL_EXPORTER_OTLP_ENDPOINT: formatted('http-url', NOT_A_COLLECTOR, {
      description:
        'OpenTelemetry collector, OTLP over HTTP (`http://` or `https://` base URL; spans go to `/v1/traces`). Set, each request is traced (see [operations](operations.md#traces)); unset, no tracing code is loaded',
      shown: 'unset (off)',
    }),
    OTEL_SERVICE_NAME: text('identity-service', { description: '`service.name` on the spans' }),
  },
  {
    // Production refuses to start without its own root secret, without its public origin (the
    // tokens' iss and aud, which every instance must share), or below the OWASP Argon2id floor.
    if: { type: 'object', required: ['NODE_ENV'], properties: { NODE_ENV: { const: 'production' } } },
    then: {
      type: 'object',
      required: ['SECRETS_KEY', 'PUBLIC_ORIGIN'],
      refusal: 'is required in production',
      properties: {
        SECRETS_KEY: { type: 'string' },
        PUBLIC_ORIGIN: { type: 'string' },
        ARGON2_MEMORY_KIB: {
          type: 'integer',
          minimum: ARGON2_PRODUCTION_FLOOR_KIB,
          refusal: `must be at least ${ARGON2_PRODUCTION_FLOOR_KIB} in production`,
        },
      },
    },
  },
);
type Environment = Static<typeof Environment>;

const checkEnvironment: ValidateFunction = envAjv.compile(Environment);

/** The first error's variable, and the refusal written beside the schema that rejected it. */
function refusal(errors: ErrorObject[]): ConfigError {
  const [first] = errors;
  const variable =
    first.keyword === 'required'
      ? (first.params as { missingProperty: string }).missingProperty
      : first.instancePath.split('/')[1];
  const reason = (first.parentSchema as { refusal?: string } | undefined)?.refusal ?? 'is invalid';
  return new ConfigError(variable, reason);
}

function rateOf(value: string): RateLimitSetting {
  const [max, windowSeconds] = value.split('/').map(Number);
  return { max, windowSeconds };
}

export interface LoadOptions {
  /**
   * Where a development root secret comes from when SECRETS_KEY is unset outside production. The
   * start-up passes `loadOrCreateDevKey` (DATA_DIR/secrets.key, written once); without it the key
   * is random and lives as long as the process, so reading the configuration writes nothing.
   */
  devSecretsKey?: (dataDir: string) => Buffer;
}

/** Reads and validates every variable; throws ConfigError naming the first bad one. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  options: LoadOptions = {},
): Config {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(Environment.properties)) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  // Ajv would also read "0x10", "1e3" or " 5" as integers; an integer variable is plain digits.
  for (const [name, schema] of Object.entries(Environment.properties)) {
    if (schema.type === 'integer' && name in raw && !/^[0-9]{1,10}$/.test(raw[name])) {
      throw new ConfigError(name, schema.refusal);
    }
  }
  if (!checkEnvironment(raw)) throw refusal(checkEnvironment.errors ?? []);
  const e = raw as unknown as Environment;
  const dataDir = resolve(e.DATA_DIR);
  const secretsKey = e.SECRETS_KEY
    ? Buffer.from(e.SECRETS_KEY, 'base64')
    : (options.devSecretsKey?.(dataDir) ?? randomBytes(32));
  const config = configFrom(e, dataDir, secretsKey);
  checkAdmin(config);
  return Object.freeze(config);
}

/** The service's configuration: what `configFrom` makes of the declared variables. */
export type Config = Readonly<ReturnType<typeof configFrom>>;

/** The one mapping from the validated variables to the shape the service reads. */
function configFrom(e: Environment, dataDir: string, secretsKey: Buffer) {
  const production = e.NODE_ENV === 'production';
  const guesses = rateOf(e.RATE_LIMIT_GUESSES);
  const ownOrigin = `http://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}`;
  const publicOrigin = (e.PUBLIC_ORIGIN && parseOrigin(e.PUBLIC_ORIGIN)) || ownOrigin;
  // Every key the service uses, each derived once from SECRETS_KEY for its own purpose.
  const keys = purposeKeys(secretsKey);
  return {
    nodeEnv: e.NODE_ENV as string,
    production,
    host: e.HOST,
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    dataDir,
    redisUrl: e.REDIS_URL,
    publicOrigin,
    corsOrigins: (e.CORS_ORIGINS?.split(',') ?? []).flatMap((entry) => parseOrigin(entry.trim()) ?? []),
    /** 32 raw bytes: the root secret. Use `keys`, never this, to key anything. */
    secretsKey,
    keys,
    cursorSigningKey: e.CURSOR_SIGNING_KEY ? Buffer.from(e.CURSOR_SIGNING_KEY, 'utf8') : keys.cursorSigning,
    cursorKeyId: e.CURSOR_KEY_ID,
    accessTokenSigningKey: e.ACCESS_TOKEN_SIGNING_KEY
      ? (JSON.parse(e.ACCESS_TOKEN_SIGNING_KEY) as Record<string, unknown>)
      : undefined,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    smsWebhookUrl: e.SMS_WEBHOOK_URL,
    identityProviders: identityProvidersFrom(e.IDENTITY_PROVIDERS, production),
    verificationCodeFormat: e.VERIFICATION_CODE_FORMAT,
    verificationCodeLength: e.VERIFICATION_CODE_LENGTH,
    totpAlgorithm: e.TOTP_ALGORITHM,
    totpDigits: e.TOTP_DIGITS,
    totpPeriod: e.TOTP_PERIOD,
    rateLimits: {
      sendsAMessage: rateOf(e.RATE_LIMIT_SENDS_A_MESSAGE),
      answersAChallenge: rateOf(e.RATE_LIMIT_ANSWERS_A_CHALLENGE),
      provesAPassword: rateOf(e.RATE_LIMIT_PROVES_A_PASSWORD),
      /** GET /account/export, per client address. */
      accountExports: rateOf(e.RATE_LIMIT_ACCOUNT_EXPORTS),
      /** The OpenID Provider's client-authenticated endpoints, per client address. */
      oidcClients: rateOf(e.RATE_LIMIT_OIDC_CLIENTS),
      /** The OpenID Provider's browser endpoints (authorization, end session), per client address. */
      oidcAuthorizations: rateOf(e.RATE_LIMIT_OIDC_AUTHORIZATIONS),
      /** Per-subject guess budgets (RATE_LIMIT_GUESSES). */
      guesses: { free: guesses.max, maxDelaySeconds: guesses.windowSeconds },
    },
    /** Proxies whose X-Forwarded-For is honoured (addresses or CIDR ranges); false: none. */
    trustProxy: ((e.TRUST_PROXY && proxyList(e.TRUST_PROXY)) || false) as string[] | false,
    logLevel: e.LOG_LEVEL as string,
    /** Lifetimes in seconds. */
    lifetimes: {
      accessToken: e.ACCESS_TOKEN_TTL,
      session: e.SESSION_TTL,
      ticket: e.SECOND_FACTOR_TICKET_TTL,
      challenge: e.CHALLENGE_TTL,
      elevation: e.ELEVATION_TTL,
      lock: e.ACCOUNT_LOCK_TTL,
      nonce: 600,
    },
    /** Argon2id memory cost in KiB; OWASP floor 19 MiB. */
    argon2MemoryKiB: e.ARGON2_MEMORY_KIB,
    /** Argon2id operations allowed at once (the rest queue). */
    argon2Concurrency: e.ARGON2_CONCURRENCY,
    /** The longest expected wait in the Argon2id queue before a request is shed with 503. */
    argon2MaxWaitMs: e.ARGON2_MAX_WAIT_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    /** How often the audit head is written to the log, in seconds (0: never). */
    auditHeadLogSeconds: e.AUDIT_HEAD_LOG_SECONDS,
    /** Out-of-band delivery timeout (SMTP connection, greeting and socket; SMS webhook total). */
    notifyTimeoutMs: e.NOTIFY_TIMEOUT_MS,
    /** The Prometheus listener (GET /metrics), apart from the API; port 0: off. */
    metrics: { host: e.METRICS_HOST, port: e.METRICS_PORT },
    /** The WebAuthn relying party; undefined: passkey routes are off (production without WEBAUTHN_*). */
    webauthn: webauthnOf(e, production, publicOrigin),
    /** The operators' listener (/admin/v1), apart from the public port; port 0: off. */
    admin: { host: e.ADMIN_HOST, port: e.ADMIN_PORT, keys: adminKeys(e.ADMIN_API_KEYS ?? '') ?? [] },
    /** New-sign-in notices on the identity's verified channel (SIGN_IN_NOTICES). */
    signInNotices: e.SIGN_IN_NOTICES === 'on',
    /** Messages after a security change to the identity's verified channels (SECURITY_NOTICES). */
    securityNotices: e.SECURITY_NOTICES === 'on',
    /** Organizations: who may create them, and the operator-defined roles (ORGANIZATION_*). */
    organizations: {
      creation: e.ORGANIZATION_CREATION as 'anyone' | 'operators',
      roles: organizationRolesFrom(e.ORGANIZATION_ROLES),
      /** Seconds an invitation stays acceptable (ORGANIZATION_INVITATION_TTL_SECONDS). */
      invitationTtl: e.ORGANIZATION_INVITATION_TTL_SECONDS,
    },
    /** The OpenID Provider: its configured clients (OIDC_CLIENTS) and lifetimes. */
    oidc: {
      clients: oidcClientsFrom(e.OIDC_CLIENTS, production),
      offlineTtl: e.OIDC_OFFLINE_TTL,
      idTokenTtl: e.OIDC_ID_TOKEN_TTL,
      sweepSeconds: e.OIDC_SWEEP_SECONDS,
    },
    /** The hosted account UI (ACCOUNT_UI, ACCOUNT_UI_PATH); undefined: not served. */
    accountUi: e.ACCOUNT_UI === 'on' ? { path: e.ACCOUNT_UI_PATH } : undefined,
    /** The product's name, logo, support link and colours (BRAND_*), for every page and message. */
    brand: brandOf(e, production),
  };
}

export interface BrandConfig {
  /** The product's name, as people see it (`Your account` when BRAND_NAME is unset). */
  name: string;
  /** BRAND_NAME is set: a name, not a phrase the pages translate. */
  named: boolean;
  /** An absolute http(s) URL (https in production); undefined: the name alone. */
  logoUrl?: string;
  /** An https: or mailto: URL; undefined: no help link. */
  supportUrl?: string;
  /** BRAND_ACCENT_COLOR, and the colours of both themes made from it. */
  accentColor: string;
  theme: Theme;
}

/** BRAND_*: the logo is https in production; the accent must keep white button text legible. */
function brandOf(e: Environment, production: boolean): BrandConfig {
  if (production && e.BRAND_LOGO_URL && !e.BRAND_LOGO_URL.startsWith('https:')) {
    throw new ConfigError('BRAND_LOGO_URL', 'must be an https URL in production');
  }
  const theme = accentTheme(e.BRAND_ACCENT_COLOR);
  if ('refusal' in theme) throw new ConfigError('BRAND_ACCENT_COLOR', theme.refusal);
  return {
    name: e.BRAND_NAME ?? 'Your account',
    named: e.BRAND_NAME !== undefined,
    ...(e.BRAND_LOGO_URL ? { logoUrl: new URL(e.BRAND_LOGO_URL).href } : {}),
    ...(e.BRAND_SUPPORT_URL ? { supportUrl: e.BRAND_SUPPORT_URL } : {}),
    accentColor: e.BRAND_ACCENT_COLOR.toLowerCase(),
    theme,
  };
}

/** An operator key's name (ADMIN_API_KEYS, npm run admin:key): the audit actor after `admin:`. */
export const ADMIN_KEY_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** ADMIN_API_KEYS: `name:sha256-hex` entries, names distinct; null when any entry is not one. */
function adminKeys(value: string): AdminKey[] | null {
  if (value === '') return [];
  const keys: AdminKey[] = [];
  for (const entry of value.split(',').map((e) => e.trim())) {
    const colon = entry.indexOf(':');
    const name = entry.slice(0, colon);
    const hex = entry.slice(colon + 1);
    if (colon < 0 || !ADMIN_KEY_NAME.test(name) || !/^[0-9a-fA-F]{64}$/.test(hex)) return null;
    if (keys.some((k) => k.name === name)) return null;
    keys.push({ name, hash: Buffer.from(hex, 'hex') });
  }
  return keys;
}

/** The operators' listener never shares a port with the public API or the metrics, and needs keys. */
function checkAdmin(config: ReturnType<typeof configFrom>): void {
  const { admin } = config;
  if (admin.port === 0) return;
  if (admin.keys.length === 0) throw new ConfigError('ADMIN_API_KEYS', 'is required when ADMIN_PORT is set');
  if (admin.port === config.port) throw new ConfigError('ADMIN_PORT', 'must differ from PORT');
  if (admin.port === config.metrics.port)
    throw new ConfigError('ADMIN_PORT', 'must differ from METRICS_PORT');
}

/**
 * Passkeys' relying party. In production it is on only when WEBAUTHN_RP_ID, WEBAUTHN_RP_NAME and
 * WEBAUTHN_ORIGINS are all set (none set: off; some: start-up stops naming the first missing).
 * Elsewhere, what is not set comes from PUBLIC_ORIGIN. Every origin must be an exact absolute
 * origin on the RP ID (the same host or a subdomain of it), as browsers require.
 */
function webauthnOf(e: Environment, production: boolean, publicOrigin: string): WebAuthnConfig | undefined {
  const names = ['WEBAUTHN_RP_ID', 'WEBAUTHN_RP_NAME', 'WEBAUTHN_ORIGINS'] as const;
  const set = names.filter((n) => e[n] !== undefined);
  if (production && set.length === 0) return undefined;
  if (production && set.length < names.length) {
    throw new ConfigError(
      names.find((n) => e[n] === undefined) as string,
      'must be set with the other WEBAUTHN_ variables (passkeys need all three in production)',
    );
  }
  const origins: string[] = [];
  for (const entry of e.WEBAUTHN_ORIGINS?.split(',') ?? [publicOrigin]) {
    const origin = parseOrigin(entry.trim());
    if (!origin) {
      throw new ConfigError(
        'WEBAUTHN_ORIGINS',
        `entry "${entry.trim()}" is not an absolute http(s) origin without path, query or wildcard`,
      );
    }
    origins.push(origin);
  }
  const rpId = e.WEBAUTHN_RP_ID ?? new URL(publicOrigin).hostname;
  for (const origin of origins) {
    const host = new URL(origin).hostname;
    if (host !== rpId && !host.endsWith(`.${rpId}`)) {
      throw new ConfigError('WEBAUTHN_ORIGINS', `entry "${origin}" is not on the relying party ${rpId}`);
    }
  }
  return { rpId, rpName: e.WEBAUTHN_RP_NAME ?? 'Identity', origins };
}

/** One OpenID Provider client as OIDC_CLIENTS (or the admin API) declares it, checked. */
export interface OidcClientConfig {
  clientId: string;
  /** The secret as configured; only for client_secret_basic and client_secret_post. */
  clientSecret?: string;
  clientName: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: OidcGrantType[];
  /** `["code"]` exactly when the client has the authorization_code grant, else `[]`. */
  responseTypes: OidcResponseType[];
  tokenEndpointAuthMethod: OidcAuthMethod;
  backchannelLogoutUri?: string;
  firstParty: boolean;
  /** PKCE (S256) is required unless a confidential client opts out with `require_pkce: false`. */
  requirePkce: boolean;
  /** RS256 (the default, which every relying party supports) or EdDSA. */
  idTokenSignedResponseAlg: OidcSigningAlg;
  /** Set: userinfo answers a JWT signed with it (application/jwt); unset: plain JSON. */
  userinfoSignedResponseAlg?: OidcSigningAlg;
  /** Shown on the consent page (docs/oidc.md, "Clients"): https, or loopback http outside production. */
  logoUri?: string;
  clientUri?: string;
  policyUri?: string;
  tosUri?: string;
  contacts: string[];
  /** The scopes it may ask for, space-separated; unset: every scope of the provider. */
  scope?: string;
  /** Seconds: the max_age of its requests that send none. */
  defaultMaxAge?: number;
  /** Accepted as RFC 7591 says; every ID token carries auth_time whatever it is. */
  requireAuthTime: boolean;
  /** The public keys of a private_key_jwt client: inline, or where to fetch them (one of the two). */
  jwks?: { keys: Record<string, unknown>[] };
  jwksUri?: string;
  /** RFC 9449 §5.2: every token request of it carries a DPoP proof, and its tokens are bound to the key. */
  dpopBoundAccessTokens: boolean;
}
export type OidcGrantType =
  | 'authorization_code'
  | 'refresh_token'
  | 'client_credentials'
  | 'urn:ietf:params:oauth:grant-type:device_code';
export type OidcAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none';
export type OidcResponseType = 'code';
export type OidcSigningAlg = 'RS256' | 'EdDSA';
/** RFC 8628's grant: a device without a browser (a CLI, a TV) signs a person in on another one. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const GRANT_TYPES: readonly OidcGrantType[] = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  DEVICE_CODE_GRANT,
];
const AUTH_METHODS: readonly OidcAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
  'none',
];
/** The methods whose client holds a secret (the others: none, or its keys). */
export const SECRET_AUTH_METHODS: readonly OidcAuthMethod[] = ['client_secret_basic', 'client_secret_post'];
/** The algorithms the provider signs with (its keys) and accepts client assertions in. */
export const OIDC_SIGNING_ALGS: readonly OidcSigningAlg[] = ['RS256', 'EdDSA'];
/** The provider's scopes (provider.ts `scopes`; test/oidc/client-metadata.test.ts compares them). */
export const OIDC_SCOPES = ['openid', 'offline_access', 'email', 'phone', 'profile', 'organization'] as const;
/**
 * Every name OIDC_CLIENTS and the admin API accept: RFC 7591 and OpenID Connect Dynamic Client
 * Registration names that mean something to this provider, and first_party and require_pkce.
 * Anything else is refused by name, so a misspelt field never silently does nothing.
 */
export const OIDC_CLIENT_FIELDS = [
  'client_id',
  'client_secret',
  'client_name',
  'redirect_uris',
  'post_logout_redirect_uris',
  'grant_types',
  'response_types',
  'token_endpoint_auth_method',
  'backchannel_logout_uri',
  'id_token_signed_response_alg',
  'userinfo_signed_response_alg',
  'logo_uri',
  'client_uri',
  'policy_uri',
  'tos_uri',
  'contacts',
  'scope',
  'default_max_age',
  'require_auth_time',
  'jwks',
  'jwks_uri',
  'dpop_bound_access_tokens',
  'first_party',
  'require_pkce',
] as const;
const CLIENT_KEYS = new Set<string>(OIDC_CLIENT_FIELDS);
export const OIDC_CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** A JWK's private members: a client's jwks holds public keys only. */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
/** Shorter than this, a default_max_age would ask for a new sign-in before the first one ends. */
const MIN_DEFAULT_MAX_AGE = 60;

/**
 * A URL shown to people (logo, home page, policy, terms): https, or http on a loopback host
 * outside production. Never another scheme (javascript:, data:), never credentials in it.
 */
function displayUriAllowed(value: string, production: boolean): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  return (
    !production && url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
  );
}

/** A client's public keys: 1 to 10 RSA or Ed25519 public JWKs; answers the reason it is refused. */
function checkJwks(value: unknown): string | undefined {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (
    typeof value !== 'object' ||
    value === null ||
    !Array.isArray(keys) ||
    keys.length === 0 ||
    keys.length > 10
  ) {
    return 'jwks must be a JWK Set: {"keys": [...]} with 1 to 10 public keys';
  }
  for (const [i, key] of keys.entries()) {
    if (typeof key !== 'object' || key === null) return `jwks key #${i + 1} is not a JWK`;
    const k = key as Record<string, unknown>;
    const secret = PRIVATE_JWK_MEMBERS.find((m) => m in k);
    if (secret) return `jwks key #${i + 1} holds a private member "${secret}": give the public key only`;
    if (!(k.kty === 'RSA' || (k.kty === 'OKP' && k.crv === 'Ed25519'))) {
      return `jwks key #${i + 1} must be an RSA or Ed25519 (OKP) key, for RS256 or EdDSA`;
    }
    try {
      createPublicKey({ key: k as import('node:crypto').JsonWebKey, format: 'jwk' });
    } catch {
      return `jwks key #${i + 1} is not a valid public key`;
    }
  }
  return undefined;
}

/**
 * Checks one client's metadata; answers the client or the reason it is refused. Redirect URIs are
 * absolute, without fragment, `https` (or `http` on a loopback host, or anywhere outside
 * production), and are later matched exactly. A client_secret_basic or client_secret_post client
 * has a secret of at least 32 characters; a private_key_jwt one has its keys (jwks or jwks_uri)
 * and no secret; a public one has neither, cannot use client credentials and always sends PKCE.
 * Fields that depend on each other are checked together (docs/oidc.md, "Clients").
 */
export function checkOidcClient(entry: unknown, production: boolean): OidcClientConfig | string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'is not an object';
  const m = entry as Record<string, unknown>;
  for (const key of Object.keys(m)) if (!CLIENT_KEYS.has(key)) return `has an unknown field "${key}"`;
  if (typeof m.client_id !== 'string' || !OIDC_CLIENT_ID.test(m.client_id)) {
    return 'needs a client_id of letters, digits, ".", "_" or "-" (at most 128)';
  }
  const method = (m.token_endpoint_auth_method ?? 'client_secret_basic') as OidcAuthMethod;
  if (!AUTH_METHODS.includes(method))
    return `token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`;
  const grants = (m.grant_types ?? ['authorization_code']) as OidcGrantType[];
  if (!Array.isArray(grants) || grants.length === 0 || grants.some((g) => !GRANT_TYPES.includes(g))) {
    return `grant_types must be a non-empty array of ${GRANT_TYPES.join(', ')}`;
  }
  const codeGrant = grants.includes('authorization_code');
  // RFC 7591 2.1: response_types and grant_types must agree. Only the code flow exists here.
  let responseTypes: OidcResponseType[] = codeGrant ? ['code'] : [];
  if (m.response_types !== undefined) {
    const rt = m.response_types;
    if (!Array.isArray(rt) || rt.some((r) => r !== 'code')) {
      return 'response_types may hold only "code" (the implicit and hybrid flows are off)';
    }
    if (rt.length > 0 && !codeGrant) return 'response_types ["code"] needs authorization_code in grant_types';
    if (rt.length === 0 && codeGrant) return 'grant_types authorization_code needs response_types ["code"]';
    responseTypes = rt.length > 0 ? ['code'] : [];
  }
  const hasKeys = m.jwks !== undefined || m.jwks_uri !== undefined;
  if (method === 'none') {
    if (m.client_secret !== undefined)
      return 'is public (token_endpoint_auth_method none) and cannot have a client_secret';
    if (grants.includes('client_credentials')) return 'is public and cannot use client_credentials';
    if (m.require_pkce === false) return 'is public and cannot turn PKCE off';
  } else if (method === 'private_key_jwt') {
    if (m.client_secret !== undefined)
      return 'authenticates with private_key_jwt and cannot have a client_secret';
    if (!hasKeys) return 'token_endpoint_auth_method private_key_jwt needs jwks or jwks_uri';
  } else if (typeof m.client_secret !== 'string' || m.client_secret.length < 32) {
    return 'needs a client_secret of at least 32 characters';
  }
  if (hasKeys && method !== 'private_key_jwt') {
    return `${m.jwks !== undefined ? 'jwks' : 'jwks_uri'} is used only with token_endpoint_auth_method private_key_jwt`;
  }
  if (m.jwks !== undefined && m.jwks_uri !== undefined) return 'jwks and jwks_uri cannot both be given';
  if (m.jwks !== undefined) {
    const refused = checkJwks(m.jwks);
    if (refused) return refused;
  }
  if (
    m.jwks_uri !== undefined &&
    (typeof m.jwks_uri !== 'string' || !redirectUriAllowed(m.jwks_uri, production))
  ) {
    return 'jwks_uri must be an absolute https URL without fragment (http only on loopback or outside production)';
  }
  const uris = (value: unknown, name: string): string[] | string => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) return `${name} must be an array of absolute URLs`;
    for (const v of value) {
      if (typeof v !== 'string' || !redirectUriAllowed(v, production)) {
        return `${name} entry "${String(v)}" must be an absolute https URL without fragment (http only on loopback or outside production)`;
      }
    }
    return value as string[];
  };
  const redirectUris = uris(m.redirect_uris, 'redirect_uris');
  if (typeof redirectUris === 'string') return redirectUris;
  if (codeGrant && redirectUris.length === 0) {
    return 'needs redirect_uris for the authorization_code grant';
  }
  const postLogout = uris(m.post_logout_redirect_uris, 'post_logout_redirect_uris');
  if (typeof postLogout === 'string') return postLogout;
  let backchannel: string | undefined;
  if (m.backchannel_logout_uri !== undefined) {
    // Operators may point it at loopback or private addresses: only they register clients.
    if (
      typeof m.backchannel_logout_uri !== 'string' ||
      !absoluteUrl(m.backchannel_logout_uri, ['http:', 'https:'])
    ) {
      return 'backchannel_logout_uri must be an absolute http(s) URL';
    }
    if (new URL(m.backchannel_logout_uri).hash) return 'backchannel_logout_uri must not have a fragment';
    backchannel = m.backchannel_logout_uri;
  }
  if (m.client_name !== undefined && (typeof m.client_name !== 'string' || m.client_name.length > 100)) {
    return 'client_name must be text of at most 100 characters';
  }
  const display: Partial<Record<'logo_uri' | 'client_uri' | 'policy_uri' | 'tos_uri', string>> = {};
  for (const name of ['logo_uri', 'client_uri', 'policy_uri', 'tos_uri'] as const) {
    const v = m[name];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v.length > 2000 || !displayUriAllowed(v, production)) {
      return `${name} must be an absolute https URL (http only on loopback outside production), at most 2000 characters`;
    }
    display[name] = v;
  }
  const contacts = m.contacts ?? [];
  if (
    !Array.isArray(contacts) ||
    contacts.length > 10 ||
    contacts.some((c) => typeof c !== 'string' || c.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(c))
  ) {
    return 'contacts must be an array of at most 10 email addresses';
  }
  let scope: string | undefined;
  if (m.scope !== undefined) {
    if (typeof m.scope !== 'string') return 'scope must be a space-separated list of scopes';
    const asked = m.scope.split(' ').filter(Boolean);
    const unknown = asked.find((s) => !(OIDC_SCOPES as readonly string[]).includes(s));
    if (unknown !== undefined)
      return `scope "${unknown}" is not a scope of this provider (${OIDC_SCOPES.join(', ')})`;
    if (asked.length === 0) return 'scope must name at least one scope';
    scope = [...new Set(asked)].join(' ');
  }
  const maxAge = m.default_max_age;
  if (
    maxAge !== undefined &&
    (typeof maxAge !== 'number' ||
      !Number.isInteger(maxAge) ||
      maxAge < MIN_DEFAULT_MAX_AGE ||
      maxAge > 31536000)
  ) {
    return `default_max_age must be a whole number of seconds from ${MIN_DEFAULT_MAX_AGE} to 31536000`;
  }
  if (maxAge !== undefined && !codeGrant) return 'default_max_age needs the authorization_code grant';
  const alg = m.id_token_signed_response_alg ?? 'RS256';
  if (!OIDC_SIGNING_ALGS.includes(alg as OidcSigningAlg)) {
    return `id_token_signed_response_alg "${String(alg)}" is not enabled here (${OIDC_SIGNING_ALGS.join(' or ')})`;
  }
  const userinfoAlg = m.userinfo_signed_response_alg;
  if (userinfoAlg !== undefined && !OIDC_SIGNING_ALGS.includes(userinfoAlg as OidcSigningAlg)) {
    return `userinfo_signed_response_alg "${String(userinfoAlg)}" is not enabled here (${OIDC_SIGNING_ALGS.join(' or ')})`;
  }
  for (const flag of [
    'first_party',
    'require_pkce',
    'require_auth_time',
    'dpop_bound_access_tokens',
  ] as const) {
    if (m[flag] !== undefined && typeof m[flag] !== 'boolean') return `${flag} must be true or false`;
  }
  return {
    clientId: m.client_id,
    ...(SECRET_AUTH_METHODS.includes(method) ? { clientSecret: m.client_secret as string } : {}),
    clientName: (m.client_name as string | undefined) ?? m.client_id,
    redirectUris,
    postLogoutRedirectUris: postLogout,
    grantTypes: [...new Set(grants)],
    responseTypes,
    tokenEndpointAuthMethod: method,
    ...(backchannel ? { backchannelLogoutUri: backchannel } : {}),
    firstParty: m.first_party === true,
    requirePkce: m.require_pkce !== false,
    idTokenSignedResponseAlg: alg as OidcSigningAlg,
    ...(userinfoAlg !== undefined ? { userinfoSignedResponseAlg: userinfoAlg as OidcSigningAlg } : {}),
    ...(display.logo_uri ? { logoUri: display.logo_uri } : {}),
    ...(display.client_uri ? { clientUri: display.client_uri } : {}),
    ...(display.policy_uri ? { policyUri: display.policy_uri } : {}),
    ...(display.tos_uri ? { tosUri: display.tos_uri } : {}),
    contacts: contacts as string[],
    ...(scope !== undefined ? { scope } : {}),
    ...(maxAge !== undefined ? { defaultMaxAge: maxAge as number } : {}),
    requireAuthTime: m.require_auth_time !== false,
    ...(m.jwks !== undefined ? { jwks: m.jwks as { keys: Record<string, unknown>[] } } : {}),
    ...(m.jwks_uri !== undefined ? { jwksUri: m.jwks_uri as string } : {}),
    dpopBoundAccessTokens: m.dpop_bound_access_tokens === true,
  };
}

/**
 * The origins the hosted pages may load images from besides their own (their CSP's img-src): the
 * brand's logo and the logos of OIDC_CLIENTS, read at start-up. A client registered through the
 * admin API later is not among them, so its logo is shown only when it is on the public origin
 * (docs/decisions.md, "Client metadata of RFC 7591").
 */
export function pageImageOrigins(config: Pick<Config, 'publicOrigin' | 'brand' | 'oidc'>): string[] {
  const own = new URL(config.publicOrigin).origin;
  const logos = [config.brand.logoUrl, ...config.oidc.clients.map((c) => c.logoUri)];
  const origins = logos.flatMap((u) => (u ? [new URL(u).origin] : [])).filter((o) => o !== own);
  return [...new Set(origins)];
}

function redirectUriAllowed(value: string, production: boolean): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash || value.includes('#')) return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  return loopback || !production;
}

function oidcClientsFrom(value: string | undefined, production: boolean): OidcClientConfig[] {
  return checkedEntries(
    'OIDC_CLIENTS',
    value,
    'client_id',
    (entry) => checkOidcClient(entry, production),
    (c) => c.clientId,
  );
}

/** The organization roles every deployment has (docs/organizations.md, "Roles and permissions"). */
export const BUILT_IN_ORGANIZATION_ROLES = ['owner', 'admin', 'member'] as const;

/** An operator-defined organization role (ORGANIZATION_ROLES): a name and its permissions. */
export interface OrganizationRoleConfig {
  name: string;
  permissions: string[];
}

const ROLE_NAME = /^[a-z][a-z0-9_-]{1,31}$/;
const PERMISSION = /^[a-z0-9_:.-]{1,64}$/;

function organizationRolesFrom(value: string | undefined): OrganizationRoleConfig[] {
  return checkedEntries(
    'ORGANIZATION_ROLES',
    value,
    'name',
    (entry): OrganizationRoleConfig | string => {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'is not an object';
      const { name, permissions, ...rest } = entry as Record<string, unknown>;
      const extra = Object.keys(rest)[0];
      if (extra !== undefined) return `has an unknown member ${JSON.stringify(extra).slice(0, 40)}`;
      if (typeof name !== 'string' || !ROLE_NAME.test(name))
        return 'needs a name matching [a-z][a-z0-9_-]{1,31}';
      if ((BUILT_IN_ORGANIZATION_ROLES as readonly string[]).includes(name))
        return 'repeats a built-in role name';
      if (!Array.isArray(permissions) || permissions.length > 64)
        return 'needs permissions: an array of at most 64';
      if (!permissions.every((p) => typeof p === 'string' && PERMISSION.test(p)))
        return 'has a permission not matching [a-z0-9_:.-]{1,64}';
      if (new Set(permissions).size !== permissions.length) return 'repeats a permission';
      return { name, permissions: permissions as string[] };
    },
    (r) => r.name,
  );
}

/**
 * A JSON array variable whose entries are checked one by one: an invalid entry, or one repeating
 * another's `key`, stops start-up with one line naming it (by its `key`, else its position).
 */
function checkedEntries<T>(
  variable: string,
  value: string | undefined,
  key: string,
  check: (entry: unknown) => T | string,
  idOf: (checked: T) => string,
): T[] {
  if (!value) return [];
  const entries: T[] = [];
  for (const [index, entry] of (JSON.parse(value) as unknown[]).entries()) {
    const id =
      typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>)[key] : undefined;
    const name = typeof id === 'string' ? `"${id}"` : `#${index + 1}`;
    const checked = check(entry);
    if (typeof checked === 'string') throw new ConfigError(variable, `entry ${name} ${checked}`);
    if (entries.some((e) => idOf(e) === idOf(checked))) {
      throw new ConfigError(variable, `entry ${name} repeats ${key === 'name' ? 'a name' : `a ${key}`}`);
    }
    entries.push(checked);
  }
  return entries;
}

export type ProviderPreset = 'google' | 'microsoft' | 'apple' | 'github';
const PRESETS: Record<ProviderPreset, { displayName: string; issuer?: string; scopes: string }> = {
  google: { displayName: 'Google', issuer: 'https://accounts.google.com', scopes: 'openid email profile' },
  microsoft: {
    displayName: 'Microsoft',
    issuer: 'https://login.microsoftonline.com/common/v2.0',
    scopes: 'openid email profile',
  },
  apple: { displayName: 'Apple', issuer: 'https://appleid.apple.com', scopes: 'openid email name' },
  github: { displayName: 'GitHub', scopes: 'read:user user:email' },
};

/** One upstream identity provider, as checkIdentityProvider reads it (docs/providers.md). */
export interface IdentityProviderConfig {
  name: string;
  displayName: string;
  preset?: ProviderPreset;
  /** Absent only for GitHub (OAuth 2 without an issuer). */
  issuer?: string;
  /** The ID-token path (POST /sign-ins with an ID token): present with `jwksUri` or `jwks`. */
  audience?: string;
  jwksUri?: string;
  jwks?: { keys: Record<string, unknown>[] };
  /** Redirect sign-in ("Continue with …"): present when `clientId` is set. */
  redirect?: {
    clientId: string;
    /** Absent for Apple, whose client secret is minted from `apple`. */
    clientSecret?: string;
    apple?: { teamId: string; keyId: string; privateKey: string };
    scopes: string;
    responseMode: 'query' | 'form_post';
    autoLink: 'off' | 'verified_email';
    signUp: boolean;
    /** Microsoft only: the tenant ids (`tid`) allowed; absent allows every tenant. */
    tenants?: string[];
  };
}

const PROVIDER_KEYS = new Set([
  'name',
  'displayName',
  'preset',
  'issuer',
  'audience',
  'jwksUri',
  'jwks',
  'clientId',
  'clientSecret',
  'scopes',
  'autoLink',
  'signUp',
  'tenants',
  'teamId',
  'keyId',
  'privateKey',
]);
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** Checks one IDENTITY_PROVIDERS entry; answers the provider or the reason it is refused. */
export function checkIdentityProvider(entry: unknown, production: boolean): IdentityProviderConfig | string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'is not an object';
  const m = entry as Record<string, unknown>;
  for (const key of Object.keys(m)) if (!PROVIDER_KEYS.has(key)) return `has an unknown field "${key}"`;
  if (typeof m.name !== 'string' || !PROVIDER_NAME.test(m.name)) {
    return 'needs a name of lower-case letters, digits, "_" or "-" (at most 63, starting with a letter or digit)';
  }
  const text = (key: string, max = 2048): string | undefined | null => {
    const v = m[key];
    if (v === undefined) return undefined;
    return typeof v === 'string' && v.length > 0 && v.length <= max ? v : null;
  };
  for (const key of ['displayName', 'issuer', 'audience', 'clientId', 'clientSecret', 'scopes']) {
    if (text(key) === null) return `${key} must be non-empty text`;
  }
  const presetName = m.preset as ProviderPreset | undefined;
  if (presetName !== undefined && !Object.hasOwn(PRESETS, presetName as string)) {
    return `preset must be one of ${Object.keys(PRESETS).join(', ')}`;
  }
  if (m.clientId === undefined) {
    const redirectOnly = [
      'clientSecret',
      'scopes',
      'autoLink',
      'signUp',
      'tenants',
      'teamId',
      'keyId',
      'privateKey',
    ];
    for (const key of redirectOnly) {
      if (m[key] !== undefined) return `${key} needs a clientId (redirect sign-in)`;
    }
    if (presetName !== undefined) return 'has a preset, which needs a clientId (redirect sign-in)';
  }
  const preset = presetName ? PRESETS[presetName] : undefined;
  const issuer = (m.issuer as string | undefined) ?? preset?.issuer;
  if (presetName === 'github') {
    if (m.issuer !== undefined) return 'is a GitHub provider, which has no issuer';
  } else {
    if (issuer === undefined) return 'needs an issuer';
    if (!absoluteUrl(issuer, production ? ['https:'] : ['https:', 'http:'])) {
      return production ? 'issuer must be an https URL' : 'issuer must be an http(s) URL';
    }
  }
  if (m.jwksUri !== undefined && m.jwks !== undefined) return 'has both jwksUri and jwks';
  if (
    m.jwksUri !== undefined &&
    (typeof m.jwksUri !== 'string' || !absoluteUrl(m.jwksUri, production ? ['https:'] : ['https:', 'http:']))
  ) {
    return 'jwksUri must be an absolute http(s) URL (https in production)';
  }
  if (
    m.jwks !== undefined &&
    (typeof m.jwks !== 'object' ||
      m.jwks === null ||
      !Array.isArray((m.jwks as { keys?: unknown }).keys) ||
      (m.jwks as { keys: unknown[] }).keys.some((k) => typeof k !== 'object' || k === null))
  ) {
    return 'jwks must be a JSON Web Key Set { "keys": [...] }';
  }
  const clientId = m.clientId as string | undefined;
  const idTokenPath = m.jwksUri !== undefined || m.jwks !== undefined;
  const audience = (m.audience as string | undefined) ?? clientId;
  if (idTokenPath && audience === undefined) return 'needs an audience (or a clientId) for ID-token sign-in';
  if (idTokenPath && presetName === 'github') return 'is a GitHub provider, which issues no ID tokens';
  if (!idTokenPath && clientId === undefined) {
    return 'needs jwksUri or jwks (ID-token sign-in) or clientId (redirect sign-in)';
  }
  let redirect: IdentityProviderConfig['redirect'];
  if (clientId !== undefined) {
    const scopes = (m.scopes as string | undefined) ?? preset?.scopes ?? 'openid email profile';
    const scopeList = scopes.split(' ');
    if (scopeList.some((s) => !SCOPE_TOKEN.test(s)))
      return 'scopes must be scope names separated by single spaces';
    if (presetName !== 'github' && !scopeList.includes('openid')) return 'scopes must include openid';
    const autoLink = m.autoLink ?? 'off';
    if (autoLink !== 'off' && autoLink !== 'verified_email')
      return 'autoLink must be "off" or "verified_email"';
    if (m.signUp !== undefined && typeof m.signUp !== 'boolean') return 'signUp must be true or false';
    let tenants: string[] | undefined;
    if (m.tenants !== undefined) {
      if (presetName !== 'microsoft') return 'tenants applies to the microsoft preset only';
      if (
        !Array.isArray(m.tenants) ||
        m.tenants.length === 0 ||
        m.tenants.some((t) => typeof t !== 'string' || !/^[0-9a-f-]{36}$/i.test(t))
      ) {
        return 'tenants must be a non-empty array of tenant ids (GUIDs)';
      }
      tenants = (m.tenants as string[]).map((t) => t.toLowerCase());
    }
    let apple: { teamId: string; keyId: string; privateKey: string } | undefined;
    const appleFields = ['teamId', 'keyId', 'privateKey'].filter((k) => m[k] !== undefined);
    if (presetName === 'apple') {
      if (m.clientSecret !== undefined) {
        return 'is an Apple provider: give teamId, keyId and privateKey instead of clientSecret';
      }
      if (appleFields.length !== 3) return 'is an Apple provider and needs teamId, keyId and privateKey';
      if (text('teamId', 64) === null || text('keyId', 64) === null) return 'teamId and keyId must be text';
      const key = m.privateKey;
      if (typeof key !== 'string' || !key.includes('-----BEGIN PRIVATE KEY-----')) {
        return 'privateKey must be the PEM text of the .p8 key';
      }
      apple = { teamId: m.teamId as string, keyId: m.keyId as string, privateKey: key };
    } else {
      if (appleFields.length > 0) return 'teamId, keyId and privateKey apply to the apple preset only';
      if (m.clientSecret === undefined) return 'needs a clientSecret for redirect sign-in';
    }
    redirect = {
      clientId,
      ...(m.clientSecret !== undefined ? { clientSecret: m.clientSecret as string } : {}),
      ...(apple ? { apple } : {}),
      scopes,
      responseMode: presetName === 'apple' ? 'form_post' : 'query',
      autoLink,
      signUp: m.signUp !== false,
      ...(tenants ? { tenants } : {}),
    };
  }
  return {
    name: m.name,
    displayName: (m.displayName as string | undefined) ?? preset?.displayName ?? m.name,
    ...(presetName ? { preset: presetName } : {}),
    ...(issuer !== undefined ? { issuer } : {}),
    ...(idTokenPath ? { audience } : {}),
    ...(m.jwksUri !== undefined ? { jwksUri: m.jwksUri as string } : {}),
    ...(m.jwks !== undefined ? { jwks: m.jwks as { keys: Record<string, unknown>[] } } : {}),
    ...(redirect ? { redirect } : {}),
  };
}

function identityProvidersFrom(value: string | undefined, production: boolean): IdentityProviderConfig[] {
  return checkedEntries(
    'IDENTITY_PROVIDERS',
    value,
    'name',
    (entry) => checkIdentityProvider(entry, production),
    (p) => p.name,
  );
}
