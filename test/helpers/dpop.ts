import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** A client's DPoP key (RFC 9449): its private half, its public JWK and that JWK's thumbprint. */
export type DpopTestKey = { privateKey: CryptoKey; jwk: JWK; jkt: string };

export async function newDpopKey(): Promise<DpopTestKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** A DPoP proof JWT (RFC 9449 §4.2) for one request, made with jose. */
export function dpopProof(
  key: DpopTestKey,
  htm: string,
  htu: string,
  opts: { nonce?: string; accessToken?: string; jti?: string } = {},
): Promise<string> {
  return new SignJWT({
    htm,
    htu,
    jti: opts.jti ?? randomUUID(),
    ...(opts.nonce ? { nonce: opts.nonce } : {}),
    ...(opts.accessToken ? { ath: createHash('sha256').update(opts.accessToken).digest('base64url') } : {}),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .setIssuedAt()
    .sign(key.privateKey);
}
