import type { FastifyBaseLogger } from 'fastify';
import { createLocalJWKSet, createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { Config, IdentityProviderConfig } from '../../config.js';
import type { Clock } from '../../platform/clock.js';

/** What a verified ID token proves: this provider vouches for this subject, for this nonce hash. */
export interface ProviderProof {
  provider: string;
  subject: string;
  /** The token's nonce claim: hex SHA-256 of a nonce issued by POST /provider-nonces. */
  nonceHash: string;
}

// Asymmetric algorithms only: a provider's JWKS publishes public keys, and an HMAC or `none`
// token must never verify against one.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const NONCE_HASH = /^[0-9a-f]{64}$/;
const MAX_SUBJECT = 255;

/** Unknown kid: refetch at most once per cooldown, so random kids cannot make us hammer the provider. */
export const JWKS_COOLDOWN_SECONDS = 30;
/** A fetched key set is trusted this long before it is refreshed on the next use. */
export const JWKS_MAX_AGE_SECONDS = 600;

/** What a remote key set uses. */
interface RemoteKeysDeps {
  clock: Clock;
  log: FastifyBaseLogger;
}

/**
 * A provider's remote key set. jose fetches, parses and deduplicates concurrent fetches; when to
 * fetch is decided here on the injected clock (jose's own cooldown reads the system clock), so the
 * cooldown and the refresh age are tested without waiting.
 */
class RemoteKeys {
  readonly #remote: ReturnType<typeof createRemoteJWKSet>;
  #loadedAt: number | undefined;
  #attemptedAt: number | undefined;
  #pending: Promise<void> | undefined;

  constructor(
    url: string,
    private readonly deps: RemoteKeysDeps,
  ) {
    // Infinite age and cooldown: jose never refetches on its own, only when reload() is called.
    this.#remote = createRemoteJWKSet(new URL(url), { cooldownDuration: Infinity, cacheMaxAge: Infinity });
  }

  readonly resolve: JWTVerifyGetKey = async (header, token) => {
    const now = this.deps.clock.now().getTime();
    if (this.#loadedAt === undefined) {
      if (!this.#pending && !this.#mayAttempt(now)) throw new errors.JWKSNoMatchingKey();
      await this.#reload(now);
    } else if (now - this.#loadedAt >= JWKS_MAX_AGE_SECONDS * 1000 && this.#mayAttempt(now)) {
      // A stale set is refreshed, but a provider outage keeps the keys we have rather than
      // refusing every sign-in.
      await this.#reload(now).catch((err: unknown) => {
        this.deps.log.warn({ errClass: (err as Error)?.name }, 'provider key set refresh failed');
      });
    }
    try {
      return await this.#remote(header, token);
    } catch (err) {
      // A kid we do not know yet: the provider may have rotated its keys. Requests that arrive
      // while that refetch runs wait for it instead of being refused by the cooldown.
      if (err instanceof errors.JWKSNoMatchingKey && (this.#pending || this.#mayAttempt(now))) {
        await this.#reload(now);
        return this.#remote(header, token);
      }
      throw err;
    }
  };

  #mayAttempt(now: number): boolean {
    return this.#attemptedAt === undefined || now - this.#attemptedAt >= JWKS_COOLDOWN_SECONDS * 1000;
  }

  /** One fetch at a time; concurrent callers share it. */
  #reload(now: number): Promise<void> {
    if (!this.#pending) {
      this.#attemptedAt = now;
      this.#pending = this.#remote
        .reload()
        .then(() => {
          this.#loadedAt = now;
        })
        .finally(() => {
          this.#pending = undefined;
        });
    }
    return this.#pending;
  }
}

interface Provider {
  config: IdentityProviderConfig;
  keys: JWTVerifyGetKey;
}

/** What verifying ID tokens uses. */
export interface ProviderVerifierDeps extends RemoteKeysDeps {
  config: Pick<Config, 'identityProviders'>;
}

/**
 * Verifies provider ID tokens against the configured providers. Built once per application, so a
 * remote key set is fetched once and shared by every route (src/context.ts builds it).
 */
export class ProviderVerifier {
  readonly #providers = new Map<string, Provider>();

  constructor(private readonly deps: ProviderVerifierDeps) {
    for (const config of deps.config.identityProviders) {
      // Entries without a key set serve redirect sign-in only (upstream.ts).
      if (config.jwksUri === undefined && config.jwks === undefined) continue;
      const keys =
        config.jwksUri !== undefined
          ? new RemoteKeys(config.jwksUri, deps).resolve
          : createLocalJWKSet(config.jwks as Parameters<typeof createLocalJWKSet>[0]);
      this.#providers.set(config.name, { config, keys });
    }
  }

  /**
   * Names of the providers configured now, for either path (a link to any other provider is not a
   * way in).
   */
  get names(): ReadonlySet<string> {
    return new Set(this.deps.config.identityProviders.map((p) => p.name));
  }

  /**
   * The proof, or null for every failure alike: unknown provider, bad signature, unknown key,
   * wrong issuer or audience, several audiences without us as `azp`, expired, missing subject or a
   * nonce claim that is not a hex SHA-256.
   * Never throws and never logs the token.
   */
  async verify(providerName: string, idToken: string): Promise<ProviderProof | null> {
    const provider = this.#providers.get(providerName);
    if (!provider) return null;
    try {
      const { payload } = await jwtVerify(idToken, provider.keys, {
        issuer: provider.config.issuer,
        audience: provider.config.audience,
        algorithms: ALGORITHMS,
        currentDate: this.deps.clock.now(),
        requiredClaims: ['sub', 'exp', 'iat', 'nonce'],
      });
      const nonce = (payload as { nonce?: unknown }).nonce;
      const subject = payload.sub;
      // OIDC Core 3.1.3.7: a token for several audiences names the party it was issued to (azp),
      // which must be us; a token issued to another client that merely lists us is refused.
      const azp = (payload as { azp?: unknown }).azp;
      const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if ((audiences.length > 1 || azp !== undefined) && azp !== provider.config.audience) return null;
      if (typeof nonce !== 'string' || !NONCE_HASH.test(nonce)) return null;
      if (typeof subject !== 'string' || subject.length === 0 || subject.length > MAX_SUBJECT) return null;
      return { provider: providerName, subject, nonceHash: nonce };
    } catch (err) {
      // Only the class of failure: the token and the claims stay out of the logs.
      this.deps.log.debug(
        { provider: providerName, errCode: (err as { code?: string })?.code },
        'ID token refused',
      );
      return null;
    }
  }
}
