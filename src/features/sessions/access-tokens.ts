import { randomUUID } from 'node:crypto';
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose';
import { type Config, ConfigError } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import type { Db } from '../../platform/db/database.js';
import { insertSigningKey, liveSigningKeys, lockKeyCreation } from './repository.js';

export interface AccessClaims {
  sub: string;
  sid: string;
  exp: number;
}

/** The active organization's claims of an access token. */
export interface OrganizationClaims {
  id: string;
  role: string;
  permissions: string[];
}

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

const TOKEN_TYPE = 'at+jwt';
// Verified claims are kept per token until it expires: the signature is checked once per token,
// while the session row is still read on every request (docs/decisions.md, "Sessions").
const CACHE_LIMIT = 50_000;

async function importPair(privateJwk: JWK): Promise<Omit<SigningKey, 'kid'>> {
  const { d: _d, ...publicJwk } = privateJwk;
  const privateKey = (await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA')) as CryptoKey;
  const publicKey = (await importJWK({ ...publicJwk, alg: 'EdDSA' }, 'EdDSA')) as CryptoKey;
  return { privateKey, publicKey, publicJwk: { ...publicJwk, alg: 'EdDSA', use: 'sig' } };
}

/** EdDSA (Ed25519) access tokens (docs/api.md, "1. Sign in"): iss, aud, sub, sid, iat, exp, jti. */
export class AccessTokens {
  private readonly cache = new Map<string, AccessClaims>();
  private constructor(
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly current: SigningKey,
    private readonly verifiers: Map<string, CryptoKey>,
    private readonly published: JWK[],
  ) {}

  /**
   * The configured key, or the oldest live key in the database, or a new one made under an
   * advisory lock so two instances starting together agree on one key; restarts keep sessions valid.
   */
  static async load(db: Db, config: Config, clock: Clock, sealer: Sealer): Promise<AccessTokens> {
    if (config.accessTokenSigningKey) {
      const jwk = config.accessTokenSigningKey as JWK;
      const kid = (jwk.kid as string | undefined) ?? 'configured';
      const pair = await importPair(jwk);
      const key = { kid, ...pair, publicJwk: { ...pair.publicJwk, kid } };
      return new AccessTokens(config, clock, key, new Map([[kid, pair.publicKey]]), [key.publicJwk]);
    }
    const rows = await db.transaction().execute(async (trx) => {
      await lockKeyCreation(trx);
      const existing = await liveSigningKeys(trx);
      if (existing.length > 0) return existing;
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      const jwk = await exportJWK(privateKey);
      const kid = randomUUID();
      const { d: _d, ...pub } = jwk;
      const sealed = sealer.seal(JSON.stringify(jwk), `signing-key:${kid}`);
      await insertSigningKey(trx, {
        kid,
        sealedPrivateJwk: sealed,
        publicJwk: { ...pub, kid, alg: 'EdDSA', use: 'sig' },
        now: clock.now(),
      });
      return [{ kid, sealedPrivateJwk: sealed }];
    });
    const keys: SigningKey[] = [];
    for (const row of rows) {
      let opened: string;
      try {
        opened = sealer.open(row.sealedPrivateJwk, `signing-key:${row.kid}`);
      } catch {
        // AES-GCM refuses another key's seal: start-up stops with one line (main.ts), no stack.
        throw new ConfigError(
          'SECRETS_KEY',
          'does not open the signing keys stored in the database: it is not the key they were sealed with',
        );
      }
      const jwk = JSON.parse(opened) as JWK;
      const pair = await importPair(jwk);
      keys.push({ kid: row.kid, ...pair, publicJwk: { ...pair.publicJwk, kid: row.kid } });
    }
    // The newest live key signs; every live key verifies, so a rotation does not end sessions.
    const current = keys[keys.length - 1];
    return new AccessTokens(
      config,
      clock,
      current,
      new Map(keys.map((k) => [k.kid, k.publicKey])),
      keys.map((k) => k.publicJwk),
    );
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.published };
  }

  /**
   * `organization`: the session's active organization and the identity's role in it as read in the
   * transaction that signs, carried as `org_id`, `org_role` and `org_permissions`
   * (docs/organizations.md, "Token claims"); absent without one.
   */
  async sign(
    identityId: string,
    sessionId: string,
    organization?: OrganizationClaims | null,
  ): Promise<{ token: string; expiresAt: Date }> {
    const now = this.clock.now();
    const iat = Math.floor(now.getTime() / 1000);
    const exp = iat + this.config.lifetimes.accessToken;
    const org = organization
      ? { org_id: organization.id, org_role: organization.role, org_permissions: organization.permissions }
      : {};
    const token = await new SignJWT({ sid: sessionId, ...org })
      .setProtectedHeader({ alg: 'EdDSA', kid: this.current.kid, typ: TOKEN_TYPE })
      .setIssuer(this.config.publicOrigin)
      .setAudience(this.config.publicOrigin)
      .setSubject(identityId)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(this.current.privateKey);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** Returns the claims of a valid, unexpired token, or null. Never throws. */
  async verify(token: string): Promise<AccessClaims | null> {
    const nowSeconds = Math.floor(this.clock.now().getTime() / 1000);
    const cached = this.cache.get(token);
    if (cached) {
      if (cached.exp > nowSeconds) return cached;
      this.cache.delete(token);
      return null;
    }
    try {
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          const key = header.kid ? this.verifiers.get(header.kid) : undefined;
          if (!key) throw new Error('unknown key');
          return key;
        },
        {
          algorithms: ['EdDSA'],
          issuer: this.config.publicOrigin,
          audience: this.config.publicOrigin,
          typ: TOKEN_TYPE,
          currentDate: this.clock.now(),
          requiredClaims: ['sub', 'sid', 'exp', 'iat', 'jti'],
        },
      );
      const claims = toClaims(payload);
      if (!claims) return null;
      if (this.cache.size >= CACHE_LIMIT) this.evictExpired(nowSeconds);
      this.cache.set(token, claims);
      return claims;
    } catch {
      return null;
    }
  }

  private evictExpired(nowSeconds: number): void {
    for (const [token, claims] of this.cache) if (claims.exp <= nowSeconds) this.cache.delete(token);
    // Still full of live tokens: drop the oldest insertions rather than grow without bound.
    const excess = this.cache.size - CACHE_LIMIT / 2;
    if (excess > 0) {
      let n = 0;
      for (const token of this.cache.keys()) {
        if (n++ >= excess) break;
        this.cache.delete(token);
      }
    }
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function toClaims(p: JWTPayload): AccessClaims | null {
  const sid = (p as { sid?: unknown }).sid;
  if (typeof p.sub !== 'string' || !UUID.test(p.sub)) return null;
  if (typeof sid !== 'string' || !UUID.test(sid)) return null;
  if (typeof p.exp !== 'number') return null;
  return { sub: p.sub, sid, exp: p.exp };
}
