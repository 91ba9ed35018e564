import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { type Config, ConfigError } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { lockKeyCreation } from '../sessions/repository.js';
import * as repo from './repository.js';

/*
 * The OpenID Provider's signing keys (docs/oidc.md, "Keys"): sealed in the database, made
 * at the first start, rotated by `npm run oidc:rotate-keys`, published until the ID tokens they
 * signed expire, then deleted by the sweep.
 */

const KEY_ALGORITHMS = ['RS256', 'EdDSA'] as const;

export interface SigningKeys {
  /** Private JWKs, newest first: the provider signs with the first of each algorithm. */
  privateJwks: Record<string, unknown>[];
  /** Every published key, the retired ones still verifying included. */
  publicJwks: JWK[];
}

export interface SigningKeyDeps {
  database: Database;
  clock: Clock;
  sealer: Sealer;
  config: Pick<Config, 'oidc'>;
}

/**
 * Loads the provider's signing keys (an RS256 key, which conformance requires, and an EdDSA key),
 * making them at the first start under an advisory lock so instances agree.
 */
export async function loadSigningKeys(deps: SigningKeyDeps): Promise<SigningKeys> {
  const { database, clock, sealer, config } = deps;
  const publishedSince = new Date(clock.now().getTime() - config.oidc.idTokenTtl * 1000);
  const rows = await database.db.transaction().execute(async (trx) => {
    await lockKeyCreation(trx);
    const existing = await repo.oidcKeys(trx, publishedSince);
    for (const alg of KEY_ALGORITHMS) {
      if (!existing.some((k) => k.alg === alg && k.retiredAt === null))
        await makeKey(trx, sealer, alg, clock.now());
    }
    return repo.oidcKeys(trx, publishedSince);
  });
  const privateJwks: Record<string, unknown>[] = [];
  const publicJwks: JWK[] = [];
  // Newest first: the provider signs with the first key of each algorithm.
  for (const row of [...rows].reverse()) {
    publicJwks.push(row.publicJwk as JWK);
    if (row.retiredAt !== null) continue;
    let opened: string;
    try {
      opened = sealer.open(row.sealedPrivateJwk, `oidc-signing-key:${row.kid}`);
    } catch {
      throw new ConfigError(
        'SECRETS_KEY',
        'does not open the OpenID Provider keys stored in the database: it is not the key they were sealed with',
      );
    }
    privateJwks.push({ ...(JSON.parse(opened) as JWK), kid: row.kid, alg: row.alg, use: 'sig' });
  }
  return { privateJwks, publicJwks };
}

/**
 * A rotation (`npm run oidc:rotate-keys`): a new key of each algorithm signs from the next start
 * of each instance; the old ones are retired, published until the ID tokens they signed expire
 * (OIDC_ID_TOKEN_TTL), then deleted by the sweep. Answers the new key ids.
 */
export async function rotateSigningKeys(
  deps: Pick<SigningKeyDeps, 'database' | 'sealer' | 'clock'> & { events: EventLog },
): Promise<string[]> {
  const { database, sealer, clock, events } = deps;
  return database.db.transaction().execute(async (trx) => {
    await lockKeyCreation(trx);
    const kids: string[] = [];
    for (const alg of KEY_ALGORITHMS) {
      const now = clock.now();
      const kid = await makeKey(trx, sealer, alg, now);
      const retired = await repo.retireOidcKeys(trx, alg, kid, now);
      // The new key's id and algorithm, and the keys it replaces: never a private part.
      await events.append(trx, {
        type: 'signing_key.rotated',
        actor: null,
        data: { kid, alg, use: 'sig', createdAt: now.toISOString(), retiredKids: retired },
      });
      kids.push(kid);
    }
    return kids;
  });
}

/** Deletes the retired keys no ID token still alive was signed with (the sweep's). */
export function deleteRetiredKeys(db: Executor, now: Date, idTokenTtl: number): Promise<void> {
  return repo.deleteRetiredOidcKeys(db, new Date(now.getTime() - idTokenTtl * 1000));
}

/** A new sealed signing key of `alg` (RSA 2048 for RS256, Ed25519 for EdDSA); answers its kid. */
async function makeKey(
  trx: Executor,
  sealer: Sealer,
  alg: (typeof KEY_ALGORITHMS)[number],
  now: Date,
): Promise<string> {
  const { privateKey } =
    alg === 'RS256'
      ? await generateKeyPair('RS256', { modulusLength: 2048, extractable: true })
      : await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = randomUUID();
  const publicJwk = publicPart({ ...jwk, kid, alg, use: 'sig' });
  const sealed = sealer.seal(JSON.stringify(jwk), `oidc-signing-key:${kid}`);
  await repo.insertOidcKey(trx, { kid, alg, sealedPrivateJwk: sealed, publicJwk }, now);
  return kid;
}

function publicPart(jwk: JWK): Record<string, unknown> {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
  return pub;
}
