import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every use of the root secret (SECRETS_KEY) goes through its own derived key, so one configured
 * secret never serves two purposes directly. The purpose strings are part of the stored data's
 * format: changing one makes every sealed value, audit seal or code hash made under it unreadable.
 */
export type KeyPurpose =
  /** AES-256-GCM sealing of TOTP secrets and generated signing keys. */
  | 'sealing'
  /** HMAC chain over the audit trail. */
  | 'audit-seal'
  /** Keyed hashes of out-of-band codes. */
  | 'out-of-band-codes'
  /** Pagination cursors, when CURSOR_SIGNING_KEY is not set. */
  | 'cursor-signing-key'
  /** Keyed hashes of guess-budget subjects (which name identifiers). */
  | 'guess-budgets'
  /** The stored check that a later start runs under the same SECRETS_KEY (key_checks). */
  | 'key-check'
  /** The OpenID Provider's own cookies (its session and interaction cookies are signed). */
  | 'oidc-cookies'
  /** The OpenID Provider's DPoP nonces (RFC 9449 §8): any instance checks another's. */
  | 'oidc-dpop-nonces'
  /** Keyed hashes of organization invitation tokens. */
  | 'organization-invitations'
  /** A sign-in code's link token and its starting browser's binding (HMAC of the code's id). */
  | 'sign-in-links';

export function deriveKey(root: Buffer, purpose: KeyPurpose): Buffer {
  return createHmac('sha256', root).update(purpose).digest();
}

/** Every purpose's key, derived once from the root secret (config.keys). */
export interface PurposeKeys {
  sealing: Buffer;
  auditSeal: Buffer;
  outOfBandCodes: Buffer;
  cursorSigning: Buffer;
  guessBudgets: Buffer;
  keyCheck: Buffer;
  oidcCookies: Buffer;
  oidcDpopNonces: Buffer;
  organizationInvitations: Buffer;
  signInLinks: Buffer;
}

/** The one function every purpose key comes from. */
export function purposeKeys(root: Buffer): PurposeKeys {
  return {
    sealing: deriveKey(root, 'sealing'),
    auditSeal: deriveKey(root, 'audit-seal'),
    outOfBandCodes: deriveKey(root, 'out-of-band-codes'),
    cursorSigning: deriveKey(root, 'cursor-signing-key'),
    guessBudgets: deriveKey(root, 'guess-budgets'),
    keyCheck: deriveKey(root, 'key-check'),
    oidcCookies: deriveKey(root, 'oidc-cookies'),
    oidcDpopNonces: deriveKey(root, 'oidc-dpop-nonces'),
    organizationInvitations: deriveKey(root, 'organization-invitations'),
    signInLinks: deriveKey(root, 'sign-in-links'),
  };
}

/**
 * Outside production only: the root secret is generated once into DATA_DIR/secrets.key (mode 0600)
 * and read back on every later start, so sealed data survives a restart. Called by the start-up
 * (serve.ts, migrate.ts, audit-verify.ts through loadConfig's `devSecretsKey`), never by reading
 * the configuration alone.
 */
export function loadOrCreateDevKey(dataDir: string): Buffer {
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
