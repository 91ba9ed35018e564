import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { deriveKey, loadOrCreateDevKey } from './platform/crypto/keys.js';
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

export interface Config {
  nodeEnv: string;
  production: boolean;
  host: string;
  port: number;
  databaseUrl: string | undefined;
  dataDir: string;
  redisUrl: string | undefined;
  publicOrigin: string;
  corsOrigins: string[];
  /** 32 raw bytes. */
  secretsKey: Buffer;
  cursorSigningKey: Buffer;
  cursorKeyId: string;
  accessTokenSigningKey: Record<string, unknown> | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  smsWebhookUrl: string | undefined;
  identityProviders: IdentityProviderConfig[];
  verificationCodeFormat: CodeFormat;
  verificationCodeLength: number;
  totpAlgorithm: TotpAlgorithm;
  totpDigits: number;
  totpPeriod: number;
  rateLimits: {
    sendsAMessage: RateLimitSetting;
    answersAChallenge: RateLimitSetting;
    provesAPassword: RateLimitSetting;
    /** GET /account/export, per client address. */
    accountExports: RateLimitSetting;
    /** Per-subject guess budgets (RATE_LIMIT_GUESSES). */
    guesses: { free: number; maxDelaySeconds: number };
  };
  /** Proxies whose X-Forwarded-For is honoured (addresses or CIDR ranges); false: none. */
  trustProxy: string[] | false;
  logLevel: string;
  /** Lifetimes in seconds (contract section 5). */
  lifetimes: {
    accessToken: number;
    session: number;
    ticket: number;
    challenge: number;
    elevation: number;
    lock: number;
    nonce: number;
  };
  /** Argon2id memory cost in KiB; OWASP floor 19 MiB. */
  argon2MemoryKiB: number;
  /** Argon2id operations allowed at once (the rest queue). */
  argon2Concurrency: number;
  /** The longest expected wait in the Argon2id queue before a request is shed with 503. */
  argon2MaxWaitMs: number;
  shutdownTimeoutMs: number;
  /** How often the audit head is written to the log, in seconds (0: never). */
  auditHeadLogSeconds: number;
  /** Out-of-band delivery timeout (SMTP connection, greeting and socket; SMS webhook total). */
  notifyTimeoutMs: number;
  /** The Prometheus listener (GET /metrics), apart from the API; port 0: off. */
  metrics: { host: string; port: number };
  /** The WebAuthn relying party; undefined: passkey routes are off (production without WEBAUTHN_*). */
  webauthn: WebAuthnConfig | undefined;
  /** The operators' listener (/admin/v1), apart from the public port; port 0: off. */
  admin: { host: string; port: number; keys: AdminKey[] };
  /** New-sign-in notices on the identity's verified channel (SIGN_IN_NOTICES). */
  signInNotices: boolean;
  /** The hosted account UI (ACCOUNT_UI, ACCOUNT_UI_PATH); undefined: not served. */
  accountUi: { path: string } | undefined;
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

const ProviderName = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' });
const IdentityProvider = Type.Union([
  Type.Object({
    name: ProviderName,
    issuer: Type.String(),
    audience: Type.String(),
    jwksUri: Type.String({ format: 'http-url' }),
  }),
  Type.Object({
    name: ProviderName,
    issuer: Type.String(),
    audience: Type.String(),
    jwksUri: Type.Optional(Type.Never()),
    jwks: Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) }),
  }),
]);
export type IdentityProviderConfig = Static<typeof IdentityProvider>;

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
  'identity-providers': jsonText(Type.Array(IdentityProvider), (list: IdentityProviderConfig[]) => {
    return new Set(list.map((p) => p.name)).size === list.length;
  }),
};
for (const ajv of [jsonAjv, envAjv]) {
  for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
}

const integer = (def: number, minimum: number, maximum: number) =>
  Type.Integer({
    default: def,
    minimum,
    maximum,
    refusal: `must be an integer from ${minimum} to ${maximum}`,
  });
const oneOf = <T extends string>(def: T, allowed: readonly T[]) =>
  Type.Unsafe<T>({
    type: 'string',
    enum: allowed,
    default: def,
    refusal: `must be one of ${allowed.join(', ')}`,
  });
const text = (def: string) => Type.String({ default: def });
const formatted = (format: string, refusal: string) => Type.Optional(Type.String({ format, refusal }));
const rate = (def: string) =>
  Type.String({
    default: def,
    pattern: '^0*[1-9][0-9]{0,8}/0*[1-9][0-9]{0,8}$',
    refusal: 'must be <count>/<seconds> with both at least 1',
  });

const ARGON2_PRODUCTION_FLOOR_KIB = 19456;

const Environment = Type.Object(
  {
    NODE_ENV: text('development'),
    HOST: text('127.0.0.1'),
    PORT: integer(3000, 0, 65535),
    DATA_DIR: text('./data'),
    DATABASE_URL: formatted('postgres-url', 'must be an absolute URL using postgres: or postgresql:'),
    REDIS_URL: formatted('redis-url', 'must be an absolute URL using redis: or rediss:'),
    PUBLIC_ORIGIN: formatted('origin', 'must be an absolute origin'),
    CORS_ORIGINS: formatted(
      'origin-list',
      'entries must be absolute origins without path, query, fragment or wildcard',
    ),
    SECRETS_KEY: formatted('base64-32-bytes', 'must be 32 bytes in base64'),
    CURSOR_SIGNING_KEY: formatted('at-least-32-bytes', 'must be at least 32 bytes'),
    CURSOR_KEY_ID: Type.String({
      default: 'k1',
      pattern: '^[A-Za-z0-9_-]{1,32}$',
      refusal: 'must be 1 to 32 characters of A-Z a-z 0-9 _ -',
    }),
    ACCESS_TOKEN_SIGNING_KEY: formatted('private-ed25519-jwk', 'must be a private Ed25519 JWK in JSON'),
    SMTP_URL: formatted('smtp-url', 'must be an absolute URL using smtp: or smtps:'),
    MAIL_FROM: text('Identity <no-reply@localhost>'),
    SMS_WEBHOOK_URL: formatted('http-url', 'must be an absolute URL using http: or https:'),
    IDENTITY_PROVIDERS: formatted(
      'identity-providers',
      'must be a JSON array of { name, issuer, audience, jwksUri | jwks } with distinct names',
    ),
    VERIFICATION_CODE_FORMAT: oneOf<CodeFormat>('numeric', ['numeric', 'alphabetic', 'alphanumeric']),
    VERIFICATION_CODE_LENGTH: integer(6, 6, 12),
    TOTP_ALGORITHM: oneOf<TotpAlgorithm>('SHA1', ['SHA1', 'SHA256', 'SHA512']),
    TOTP_DIGITS: integer(6, 6, 8),
    TOTP_PERIOD: integer(30, 15, 120),
    RATE_LIMIT_SENDS_A_MESSAGE: rate('5/900'),
    RATE_LIMIT_ANSWERS_A_CHALLENGE: rate('10/60'),
    RATE_LIMIT_PROVES_A_PASSWORD: rate('10/60'),
    RATE_LIMIT_ACCOUNT_EXPORTS: rate('5/3600'),
    // Default: ten free failures, then 1, 2, 4 ... seconds up to twelve hours between attempts (the
    // bound this keeps on guessing a 6-digit code, ten sent codes live at once included, is in
    // docs/security.md "The guessing bound").
    RATE_LIMIT_GUESSES: Type.String({
      default: `10/${12 * 3600}`,
      pattern: '^0*[1-9][0-9]{1,8}/0*[1-9][0-9]{0,8}$',
      refusal: 'must be <free failures>/<longest delay in seconds> with at least 10 free failures',
    }),
    TRUST_PROXY: formatted(
      'proxy-list',
      'must be a comma-separated list of proxy addresses or CIDR ranges (a hop count or true is not accepted)',
    ),
    LOG_LEVEL: oneOf('info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    ACCESS_TOKEN_TTL: integer(900, 60, 86400),
    SESSION_TTL: integer(30 * 86400, 300, 365 * 86400),
    SECOND_FACTOR_TICKET_TTL: integer(300, 60, 3600),
    CHALLENGE_TTL: integer(900, 60, 86400),
    ELEVATION_TTL: integer(300, 30, 3600),
    ACCOUNT_LOCK_TTL: integer(900, 60, 86400),
    ARGON2_MEMORY_KIB: integer(ARGON2_PRODUCTION_FLOOR_KIB, 8, 1048576),
    // One core stays free for the event loop and the database driver.
    ARGON2_CONCURRENCY: integer(Math.max(1, availableParallelism() - 1), 1, 256),
    ARGON2_MAX_WAIT_MS: integer(3000, 100, 600000),
    SHUTDOWN_TIMEOUT_MS: integer(10000, 0, 600000),
    AUDIT_HEAD_LOG_SECONDS: integer(3600, 0, 86400),
    NOTIFY_TIMEOUT_MS: integer(10000, 100, 120000),
    METRICS_PORT: integer(0, 0, 65535),
    // Loopback by default, like ADMIN_HOST: the metrics name routes, rates and refusals, which are for
    // the operator, not for whoever reaches HOST.
    METRICS_HOST: text('127.0.0.1'),
    WEBAUTHN_RP_ID: Type.Optional(
      Type.String({
        pattern: '^(localhost|([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63})$',
        refusal: 'must be a lower-case domain name (no scheme, port or path), or localhost',
      }),
    ),
    WEBAUTHN_RP_NAME: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, refusal: 'must be 1 to 64 characters' }),
    ),
    WEBAUTHN_ORIGINS: Type.Optional(Type.String()),
    SIGN_IN_NOTICES: oneOf('on', ['on', 'off']),
    ACCOUNT_UI: oneOf('on', ['on', 'off']),
    // A path of its own outside /api/ (the API's cache and CORS policies are not the UI's).
    ACCOUNT_UI_PATH: Type.String({
      default: '/account/',
      pattern: '^/(?!api/)([A-Za-z0-9._~-]+/)+$',
      refusal: 'must be an absolute path of letters, digits . _ ~ - segments ending with /, outside /api/',
    }),
    ADMIN_PORT: integer(0, 0, 65535),
    ADMIN_HOST: text('127.0.0.1'),
    ADMIN_API_KEYS: formatted(
      'admin-keys',
      'must be a comma-separated list of name:sha256-hex (64 hex digits) with distinct names of a-z 0-9 . _ -',
    ),
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

/** Reads and validates every variable; throws ConfigError naming the first bad one. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
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

  const production = e.NODE_ENV === 'production';
  const dataDir = resolve(e.DATA_DIR);
  const secretsKey = e.SECRETS_KEY ? Buffer.from(e.SECRETS_KEY, 'base64') : loadOrCreateDevKey(dataDir);
  const guesses = rateOf(e.RATE_LIMIT_GUESSES);
  const ownOrigin = `http://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}`;

  const config: Config = {
    nodeEnv: e.NODE_ENV,
    production,
    host: e.HOST,
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    dataDir,
    redisUrl: e.REDIS_URL,
    publicOrigin: (e.PUBLIC_ORIGIN && parseOrigin(e.PUBLIC_ORIGIN)) || ownOrigin,
    corsOrigins: (e.CORS_ORIGINS?.split(',') ?? []).flatMap((entry) => parseOrigin(entry.trim()) ?? []),
    secretsKey,
    cursorSigningKey: e.CURSOR_SIGNING_KEY
      ? Buffer.from(e.CURSOR_SIGNING_KEY, 'utf8')
      : deriveKey(secretsKey, 'cursor-signing-key'),
    cursorKeyId: e.CURSOR_KEY_ID,
    accessTokenSigningKey: e.ACCESS_TOKEN_SIGNING_KEY ? JSON.parse(e.ACCESS_TOKEN_SIGNING_KEY) : undefined,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    smsWebhookUrl: e.SMS_WEBHOOK_URL,
    identityProviders: e.IDENTITY_PROVIDERS ? JSON.parse(e.IDENTITY_PROVIDERS) : [],
    verificationCodeFormat: e.VERIFICATION_CODE_FORMAT,
    verificationCodeLength: e.VERIFICATION_CODE_LENGTH,
    totpAlgorithm: e.TOTP_ALGORITHM,
    totpDigits: e.TOTP_DIGITS,
    totpPeriod: e.TOTP_PERIOD,
    rateLimits: {
      sendsAMessage: rateOf(e.RATE_LIMIT_SENDS_A_MESSAGE),
      answersAChallenge: rateOf(e.RATE_LIMIT_ANSWERS_A_CHALLENGE),
      provesAPassword: rateOf(e.RATE_LIMIT_PROVES_A_PASSWORD),
      accountExports: rateOf(e.RATE_LIMIT_ACCOUNT_EXPORTS),
      guesses: { free: guesses.max, maxDelaySeconds: guesses.windowSeconds },
    },
    trustProxy: (e.TRUST_PROXY && proxyList(e.TRUST_PROXY)) || false,
    logLevel: e.LOG_LEVEL,
    lifetimes: {
      accessToken: e.ACCESS_TOKEN_TTL,
      session: e.SESSION_TTL,
      ticket: e.SECOND_FACTOR_TICKET_TTL,
      challenge: e.CHALLENGE_TTL,
      elevation: e.ELEVATION_TTL,
      lock: e.ACCOUNT_LOCK_TTL,
      nonce: 600,
    },
    argon2MemoryKiB: e.ARGON2_MEMORY_KIB,
    argon2Concurrency: e.ARGON2_CONCURRENCY,
    argon2MaxWaitMs: e.ARGON2_MAX_WAIT_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    auditHeadLogSeconds: e.AUDIT_HEAD_LOG_SECONDS,
    notifyTimeoutMs: e.NOTIFY_TIMEOUT_MS,
    metrics: { host: e.METRICS_HOST, port: e.METRICS_PORT },
    webauthn: undefined,
    admin: { host: e.ADMIN_HOST, port: e.ADMIN_PORT, keys: adminKeys(e.ADMIN_API_KEYS ?? '') ?? [] },
    signInNotices: e.SIGN_IN_NOTICES === 'on',
    accountUi: e.ACCOUNT_UI === 'on' ? { path: e.ACCOUNT_UI_PATH } : undefined,
  };
  config.webauthn = webauthnOf(e, production, config.publicOrigin);
  checkAdmin(config);
  return Object.freeze(config);
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
function checkAdmin(config: Config): void {
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
