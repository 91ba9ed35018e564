import { createHmac, createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';

/**
 * Standard Webhooks signatures (docs/events.md, "Verifying"): `v1` is base64 HMAC-SHA256, keyed
 * by the base64 part of the `whsec_` secret, over `id.timestamp.body`; `v1a` is base64 Ed25519 over
 * the same content, with a key whose public half is published as `whpk_<base64 of the raw key>`.
 */

const SECRET_PREFIX = 'whsec_';
const PUBLIC_KEY_PREFIX = 'whpk_';

/** A new signing secret: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** A new Ed25519 key: its private half as PKCS#8 DER in base64 (to seal), its public half as `whpk_…`. */
export function newSigningKey(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  return {
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    publicKey: PUBLIC_KEY_PREFIX + Buffer.from(jwk.x as string, 'base64url').toString('base64'),
  };
}

function signedContent(id: string, timestamp: number, body: string): string {
  return `${id}.${timestamp}.${body}`;
}

/** `v1,<base64 HMAC>` with one `whsec_` secret. */
export function v1Signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key)
    .update(signedContent(id, timestamp, body))
    .digest('base64')}`;
}

/** `v1a,<base64 Ed25519 signature>` with a private key as newSigningKey makes it. */
export function v1aSignature(privateKey: string, id: string, timestamp: number, body: string): string {
  const key = createPrivateKey({ key: Buffer.from(privateKey, 'base64'), format: 'der', type: 'pkcs8' });
  return `v1a,${sign(null, Buffer.from(signedContent(id, timestamp, body)), key).toString('base64')}`;
}

/** The associated data each sealed value is bound to (its row and its role). */
export const secretAad = (endpointId: string) => `webhook-secret:${endpointId}`;
export const previousSecretAad = (endpointId: string) => `webhook-previous-secret:${endpointId}`;
export const signingKeyAad = (endpointId: string) => `webhook-ed25519:${endpointId}`;
