import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';

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

export interface IdentityProviderConfig {
  name: string;
  issuer: string;
  audience: string;
  jwksUri?: string;
  jwks?: { keys: Record<string, unknown>[] };
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
  };
  trustProxy: number | false;
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
  shutdownTimeoutMs: number;
  /** Out-of-band delivery timeout (SMTP connection, greeting and socket; SMS webhook total). */
  notifyTimeoutMs: number;
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function intVar(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be an integer from ${min} to ${max}`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}`);
  return n;
}

function enumVar<T extends string>(env: Env, name: string, def: T, allowed: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}`);
  }
  return raw as T;
}

function rateVar(env: Env, name: string, def: RateLimitSetting): RateLimitSetting {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(raw);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) {
    throw new ConfigError(name, 'must be <count>/<seconds> with both at least 1');
  }
  return { max: Number(m[1]), windowSeconds: Number(m[2]) };
}

function urlVar(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be an absolute URL');
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}`);
  }
  return raw;
}

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

function keyVar(env: Env, name: string): Buffer | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== raw.replace(/=+$/, '')) {
    throw new ConfigError(name, 'must be 32 bytes in base64');
  }
  return key;
}

function loadOrCreateDevKey(dataDir: string): Buffer {
  const path = join(dataDir, 'secrets.key');
  if (existsSync(path)) {
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length === 32) return key;
  }
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(path, key.toString('base64'), { mode: 0o600 });
  return key;
}

function providersVar(env: Env): IdentityProviderConfig[] {
  const raw = env.IDENTITY_PROVIDERS;
  if (raw === undefined || raw === '') return [];
  const fail = (): never => {
    throw new ConfigError(
      'IDENTITY_PROVIDERS',
      'must be a JSON array of { name, issuer, audience, jwksUri | jwks }',
    );
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return fail();
  }
  if (!Array.isArray(parsed)) return fail();
  const names = new Set<string>();
  return parsed.map((p) => {
    if (typeof p !== 'object' || p === null) return fail();
    const { name, issuer, audience, jwksUri, jwks } = p as Record<string, unknown>;
    if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) return fail();
    if (typeof issuer !== 'string' || typeof audience !== 'string') return fail();
    if (names.has(name)) return fail();
    names.add(name);
    if (jwksUri !== undefined) {
      if (typeof jwksUri !== 'string') return fail();
      try {
        const u = new URL(jwksUri);
        if (u.protocol !== 'https:' && u.protocol !== 'http:') return fail();
      } catch {
        return fail();
      }
      return { name, issuer, audience, jwksUri };
    }
    if (typeof jwks !== 'object' || jwks === null || !Array.isArray((jwks as { keys?: unknown }).keys)) {
      return fail();
    }
    return { name, issuer, audience, jwks: jwks as { keys: Record<string, unknown>[] } };
  });
}

/** Reads and validates every variable; throws ConfigError naming the first bad one. */
export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = env.NODE_ENV || 'development';
  const production = nodeEnv === 'production';
  const host = env.HOST || '127.0.0.1';
  const port = intVar(env, 'PORT', 3000, 0, 65535);
  const dataDir = resolve(env.DATA_DIR || './data');

  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && databaseUrl !== 'memory://') {
    urlVar(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  }
  const redisUrl = urlVar(env, 'REDIS_URL', ['redis:', 'rediss:']);

  let publicOrigin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (env.PUBLIC_ORIGIN) {
    const origin = parseOrigin(env.PUBLIC_ORIGIN);
    if (!origin) throw new ConfigError('PUBLIC_ORIGIN', 'must be an absolute origin');
    publicOrigin = origin;
  }

  const corsOrigins: string[] = [];
  if (env.CORS_ORIGINS) {
    for (const entry of env.CORS_ORIGINS.split(',').map((s) => s.trim())) {
      const origin = parseOrigin(entry);
      if (!origin) {
        throw new ConfigError(
          'CORS_ORIGINS',
          'entries must be absolute origins without path, query, fragment or wildcard',
        );
      }
      corsOrigins.push(origin);
    }
  }

  let secretsKey = keyVar(env, 'SECRETS_KEY');
  if (!secretsKey) {
    if (production) throw new ConfigError('SECRETS_KEY', 'is required in production');
    secretsKey = loadOrCreateDevKey(dataDir);
  }
  let cursorSigningKey: Buffer;
  if (env.CURSOR_SIGNING_KEY) {
    cursorSigningKey = Buffer.from(env.CURSOR_SIGNING_KEY, 'utf8');
    if (cursorSigningKey.length < 32) {
      throw new ConfigError('CURSOR_SIGNING_KEY', 'must be at least 32 bytes');
    }
  } else {
    cursorSigningKey = deriveKey(secretsKey, 'cursor-signing-key');
  }
  const cursorKeyId = env.CURSOR_KEY_ID || 'k1';
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(cursorKeyId)) {
    throw new ConfigError('CURSOR_KEY_ID', 'must be 1 to 32 characters of A-Z a-z 0-9 _ -');
  }

  let accessTokenSigningKey: Record<string, unknown> | undefined;
  if (env.ACCESS_TOKEN_SIGNING_KEY) {
    try {
      accessTokenSigningKey = JSON.parse(env.ACCESS_TOKEN_SIGNING_KEY);
    } catch {
      throw new ConfigError('ACCESS_TOKEN_SIGNING_KEY', 'must be a private Ed25519 JWK in JSON');
    }
    const k = accessTokenSigningKey as Record<string, unknown>;
    if (k.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.d !== 'string') {
      throw new ConfigError('ACCESS_TOKEN_SIGNING_KEY', 'must be a private Ed25519 JWK in JSON');
    }
  }

  const smtpUrl = urlVar(env, 'SMTP_URL', ['smtp:', 'smtps:']);
  const mailFrom = env.MAIL_FROM || 'Identity <no-reply@localhost>';
  const smsWebhookUrl = urlVar(env, 'SMS_WEBHOOK_URL', ['http:', 'https:']);

  const trustRaw = env.TRUST_PROXY;
  let trustProxy: number | false = false;
  if (trustRaw && trustRaw !== 'off' && trustRaw !== 'false') {
    trustProxy = intVar(env, 'TRUST_PROXY', 0, 1, 16);
  }

  const config: Config = {
    nodeEnv,
    production,
    host,
    port,
    databaseUrl,
    dataDir,
    redisUrl,
    publicOrigin,
    corsOrigins,
    secretsKey,
    cursorSigningKey,
    cursorKeyId,
    accessTokenSigningKey,
    smtpUrl,
    mailFrom,
    smsWebhookUrl,
    identityProviders: providersVar(env),
    verificationCodeFormat: enumVar<CodeFormat>(env, 'VERIFICATION_CODE_FORMAT', 'numeric', [
      'numeric',
      'alphabetic',
      'alphanumeric',
    ]),
    verificationCodeLength: intVar(env, 'VERIFICATION_CODE_LENGTH', 6, 6, 12),
    totpAlgorithm: enumVar<TotpAlgorithm>(env, 'TOTP_ALGORITHM', 'SHA1', ['SHA1', 'SHA256', 'SHA512']),
    totpDigits: intVar(env, 'TOTP_DIGITS', 6, 6, 8),
    totpPeriod: intVar(env, 'TOTP_PERIOD', 30, 15, 120),
    rateLimits: {
      sendsAMessage: rateVar(env, 'RATE_LIMIT_SENDS_A_MESSAGE', { max: 5, windowSeconds: 900 }),
      answersAChallenge: rateVar(env, 'RATE_LIMIT_ANSWERS_A_CHALLENGE', {
        max: 10,
        windowSeconds: 60,
      }),
      provesAPassword: rateVar(env, 'RATE_LIMIT_PROVES_A_PASSWORD', {
        max: 10,
        windowSeconds: 60,
      }),
    },
    trustProxy,
    logLevel: enumVar(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    lifetimes: {
      accessToken: intVar(env, 'ACCESS_TOKEN_TTL', 900, 60, 86400),
      session: intVar(env, 'SESSION_TTL', 30 * 86400, 300, 365 * 86400),
      ticket: intVar(env, 'SECOND_FACTOR_TICKET_TTL', 300, 60, 3600),
      challenge: intVar(env, 'CHALLENGE_TTL', 900, 60, 86400),
      elevation: intVar(env, 'ELEVATION_TTL', 300, 30, 3600),
      lock: intVar(env, 'ACCOUNT_LOCK_TTL', 900, 60, 86400),
      nonce: 600,
    },
    argon2MemoryKiB: intVar(env, 'ARGON2_MEMORY_KIB', 19456, 8, 1048576),
    // One core stays free for the event loop and the database driver.
    argon2Concurrency: intVar(env, 'ARGON2_CONCURRENCY', Math.max(1, availableParallelism() - 1), 1, 256),
    shutdownTimeoutMs: intVar(env, 'SHUTDOWN_TIMEOUT_MS', 10000, 0, 600000),
    notifyTimeoutMs: intVar(env, 'NOTIFY_TIMEOUT_MS', 10000, 100, 120000),
  };
  if (production && config.argon2MemoryKiB < 19456) {
    throw new ConfigError('ARGON2_MEMORY_KIB', 'must be at least 19456 in production');
  }
  return Object.freeze(config);
}

/** Derives a sub-key so one configured secret never serves two purposes directly. */
export function deriveKey(key: Buffer, purpose: string): Buffer {
  return createHmac('sha256', key).update(purpose).digest();
}
