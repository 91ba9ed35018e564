import {
  createCipheriv,
  createHash,
  pbkdf2 as pbkdf2Callback,
  randomBytes,
  scrypt as scryptCallback,
  timingSafeEqual,
} from 'node:crypto';
import { promisify } from 'node:util';

/**
 * Password hashes made elsewhere and brought in by an import (docs/import.md, "Password hashes"),
 * kept as given until the first successful sign-in replaces them with Argon2id
 * (docs/decisions.md, "Imported password hashes"). Each scheme has one stored form, self-describing,
 * so a sign-in needs nothing but the row:
 *
 * | scheme | stored form |
 * |---|---|
 * | Argon2id, Argon2i | PHC (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`), verified by @node-rs/argon2 |
 * | bcrypt | `$2a$`, `$2b$`, `$2y$` modular crypt, verified by bcryptjs on the hashing threads |
 * | scrypt | PHC `$scrypt$ln=…,r=…,p=…$salt$hash` (salt and hash in base64) |
 * | Firebase scrypt | `$firebase-scrypt$ln=…,r=…$separator$signerKey$salt$hash` (base64 each) |
 * | PBKDF2 | Django's `pbkdf2_sha256$iterations$salt$hash` (and `pbkdf2_sha1`), or `$pbkdf2-sha1|sha256|sha512$i=…$salt$hash` (base64 salt and hash; Keycloak's credentials become this) |
 * | salted SHA-256/512 | `$salted-sha256|sha512$pre|post$salt$hash` (base64), only with PASSWORD_WEAK_HASHES=on |
 *
 * No crypto of our own beyond Firebase's published steps: scrypt and PBKDF2 are node:crypto's
 * (libuv pool), bcrypt is bcryptjs, Argon2 is @node-rs/argon2.
 */

export type HashScheme =
  | 'argon2id'
  | 'argon2i'
  | 'bcrypt'
  | 'scrypt'
  | 'firebase-scrypt'
  | 'pbkdf2'
  | 'salted-sha';

export interface ParsedHash {
  scheme: HashScheme;
  /**
   * The scheme with the parameters its cost depends on (`bcrypt:12`, `pbkdf2-sha256:600000`):
   * hashes with one profile take one time to verify, which the equal-time floor measures
   * (passwords.ts).
   */
  profile: string;
  /** Salted SHA: a single fast digest, accepted only behind PASSWORD_WEAK_HASHES. */
  weak: boolean;
}

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const B64_OR_URL = /^[A-Za-z0-9+/\-_.]+={0,2}$/;

/** Standard, URL-safe or passlib's adapted base64 (`.` for `+`), padded or not. */
function b64(text: string): Buffer {
  return Buffer.from(text.replace(/\./g, '+').replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

function params(text: string): Map<string, number> | undefined {
  const out = new Map<string, number>();
  for (const part of text.split(',')) {
    const m = /^([a-z]+)=(\d{1,9})$/.exec(part);
    if (!m) return undefined;
    out.set(m[1], Number(m[2]));
  }
  return out;
}

const DIGESTS = { sha1: 'sha1', sha256: 'sha256', sha512: 'sha512' } as const;
type Digest = keyof typeof DIGESTS;

interface Pbkdf2Hash {
  digest: Digest;
  iterations: number;
  salt: Buffer;
  hash: Buffer;
}

interface ScryptHash {
  ln: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

interface FirebaseHash {
  ln: number;
  r: number;
  separator: Buffer;
  signerKey: Buffer;
  salt: Buffer;
  hash: Buffer;
}

interface SaltedSha {
  digest: 'sha256' | 'sha512';
  position: 'pre' | 'post';
  salt: Buffer;
  hash: Buffer;
}

type Decoded =
  | { scheme: 'argon2id' | 'argon2i'; m: number; t: number; p: number }
  | { scheme: 'bcrypt'; cost: number }
  | ({ scheme: 'scrypt' } & ScryptHash)
  | ({ scheme: 'firebase-scrypt' } & FirebaseHash)
  | ({ scheme: 'pbkdf2' } & Pbkdf2Hash)
  | ({ scheme: 'salted-sha' } & SaltedSha);

// Bounds on what a stored hash may ask of a verification: a hash is data brought in by an import,
// and one absurd cost must not hold a hashing thread for minutes.
const MAX_SCRYPT_LN = 20;
const MAX_SCRYPT_R = 32;
const MAX_SCRYPT_P = 16;
const MAX_PBKDF2_ITERATIONS = 5_000_000;
const MAX_BCRYPT_COST = 16;

function decode(stored: string): Decoded | undefined {
  if (stored.length > 1024) return undefined;
  let m = /^\$(argon2id|argon2i)\$v=19\$([a-z=0-9,]+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(stored);
  if (m) {
    const p = params(m[2]);
    const mm = p?.get('m');
    const t = p?.get('t');
    const pp = p?.get('p');
    if (!mm || !t || !pp || mm > 1048576 || t > 64 || pp > 16) return undefined;
    return { scheme: m[1] as 'argon2id' | 'argon2i', m: mm, t, p: pp };
  }
  m = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/.exec(stored);
  if (m) {
    const cost = Number(m[1]);
    if (cost < 4 || cost > MAX_BCRYPT_COST) return undefined;
    return { scheme: 'bcrypt', cost };
  }
  m = /^\$scrypt\$([a-z=0-9,]+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    const p = params(m[1]);
    const ln = p?.get('ln');
    const r = p?.get('r');
    const pp = p?.get('p');
    if (!ln || !r || !pp || ln > MAX_SCRYPT_LN || r > MAX_SCRYPT_R || pp > MAX_SCRYPT_P) return undefined;
    if (!B64_OR_URL.test(m[2]) || !B64_OR_URL.test(m[3])) return undefined;
    const hash = b64(m[3]);
    if (hash.length < 16 || hash.length > 128) return undefined;
    return { scheme: 'scrypt', ln, r, p: pp, salt: b64(m[2]), hash };
  }
  m = /^\$firebase-scrypt\$([a-z=0-9,]+)\$([^$]+)\$([^$]+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    const p = params(m[1]);
    const ln = p?.get('ln');
    const r = p?.get('r');
    if (!ln || !r || ln > MAX_SCRYPT_LN || r > MAX_SCRYPT_R) return undefined;
    if (![m[2], m[3], m[4], m[5]].every((x) => B64_OR_URL.test(x))) return undefined;
    const signerKey = b64(m[3]);
    const hash = b64(m[5]);
    if (signerKey.length === 0 || hash.length !== signerKey.length) return undefined;
    return { scheme: 'firebase-scrypt', ln, r, separator: b64(m[2]), signerKey, salt: b64(m[4]), hash };
  }
  // Django: the salt is text used as it is; the hash is standard base64.
  m = /^pbkdf2_(sha1|sha256)\$(\d{1,9})\$([^$]{1,200})\$([A-Za-z0-9+/]+={0,2})$/.exec(stored);
  if (m) {
    const iterations = Number(m[2]);
    if (iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS) return undefined;
    const hash = Buffer.from(m[4], 'base64');
    if (hash.length < 16) return undefined;
    return { scheme: 'pbkdf2', digest: m[1] as Digest, iterations, salt: Buffer.from(m[3], 'utf8'), hash };
  }
  m = /^\$pbkdf2-(sha1|sha256|sha512)\$i=(\d{1,9})\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    const iterations = Number(m[2]);
    if (iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS) return undefined;
    if (!B64_OR_URL.test(m[3]) || !B64_OR_URL.test(m[4])) return undefined;
    const hash = b64(m[4]);
    if (hash.length < 16 || hash.length > 128) return undefined;
    return { scheme: 'pbkdf2', digest: m[1] as Digest, iterations, salt: b64(m[3]), hash };
  }
  m = /^\$salted-(sha256|sha512)\$(pre|post)\$([^$]*)\$([^$]+)$/.exec(stored);
  if (m) {
    if ((m[3] && !B64.test(m[3])) || !B64.test(m[4])) return undefined;
    const digest = m[1] as 'sha256' | 'sha512';
    const hash = Buffer.from(m[4], 'base64');
    if (hash.length !== (digest === 'sha256' ? 32 : 64)) return undefined;
    return {
      scheme: 'salted-sha',
      digest,
      position: m[2] as 'pre' | 'post',
      salt: Buffer.from(m[3], 'base64'),
      hash,
    };
  }
  return undefined;
}

function profileOf(d: Decoded): string {
  switch (d.scheme) {
    case 'argon2id':
    case 'argon2i':
      return `${d.scheme}:m=${d.m},t=${d.t},p=${d.p}`;
    case 'bcrypt':
      return `bcrypt:${d.cost}`;
    case 'scrypt':
      return `scrypt:ln=${d.ln},r=${d.r},p=${d.p}`;
    case 'firebase-scrypt':
      return `firebase-scrypt:ln=${d.ln},r=${d.r}`;
    case 'pbkdf2':
      return `pbkdf2-${d.digest}:${d.iterations}`;
    case 'salted-sha':
      return `salted-${d.digest}`;
  }
}

/** The scheme and cost profile of a stored hash, or undefined when no verifier knows its form. */
export function parseStoredHash(stored: string): ParsedHash | undefined {
  const d = decode(stored);
  if (!d) return undefined;
  return { scheme: d.scheme, profile: profileOf(d), weak: d.scheme === 'salted-sha' };
}

const scrypt = promisify(scryptCallback) as (
  password: string | Buffer,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;
const pbkdf2 = promisify(pbkdf2Callback);

function same(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function scryptOptions(ln: number, r: number, p: number) {
  const N = 2 ** ln;
  return { N, r, p, maxmem: 256 * N * r + 1024 * 1024 };
}

/**
 * Firebase's modified scrypt (the steps published with its scrypt fork, firebase/scrypt): the
 * scrypt key of the password under salt ‖ separator (N = 2^memCost, r = rounds, p = 1, 32 bytes)
 * encrypts the project's signer key with AES-256-CTR and a zero IV; the result is the hash.
 */
export async function firebaseScrypt(
  password: string,
  h: { ln: number; r: number; separator: Buffer; signerKey: Buffer; salt: Buffer },
): Promise<Buffer> {
  const key = await scrypt(
    Buffer.from(password, 'utf8'),
    Buffer.concat([h.salt, h.separator]),
    32,
    scryptOptions(h.ln, h.r, 1),
  );
  const cipher = createCipheriv('aes-256-ctr', key, Buffer.alloc(16, 0));
  return Buffer.concat([cipher.update(h.signerKey), cipher.final()]);
}

/**
 * Verifies the node:crypto schemes (scrypt, Firebase scrypt, PBKDF2, salted SHA): the key
 * derivations run in the libuv pool. Argon2 and bcrypt go to the hashing threads (passwords.ts).
 * False for a wrong password and for a hash no verifier knows; the weak schemes only when allowed.
 */
export async function verifyWithNodeCrypto(
  stored: string,
  password: string,
  weakHashes: boolean,
): Promise<boolean> {
  const d = decode(stored);
  if (!d) return false;
  const pw = Buffer.from(password, 'utf8');
  switch (d.scheme) {
    case 'scrypt':
      return same(await scrypt(pw, d.salt, d.hash.length, scryptOptions(d.ln, d.r, d.p)), d.hash);
    case 'firebase-scrypt':
      return same(await firebaseScrypt(password, d), d.hash);
    case 'pbkdf2':
      return same(await pbkdf2(pw, d.salt, d.iterations, d.hash.length, DIGESTS[d.digest]), d.hash);
    case 'salted-sha': {
      if (!weakHashes) return false;
      const input = d.position === 'pre' ? Buffer.concat([d.salt, pw]) : Buffer.concat([pw, d.salt]);
      return same(createHash(d.digest).update(input).digest(), d.hash);
    }
    default:
      return false;
  }
}

/**
 * A hash of a random password with the same scheme and cost as `stored`: what a refusal measures
 * its floor against, never a person's hash. Undefined for Argon2 and bcrypt, made by passwords.ts
 * with their own libraries.
 */
export async function nodeCryptoSampleLike(stored: string): Promise<string | undefined> {
  const d = decode(stored);
  if (!d) return undefined;
  const password = randomBytes(18).toString('base64');
  const salt = randomBytes(16);
  switch (d.scheme) {
    case 'scrypt': {
      const hash = await scrypt(Buffer.from(password), salt, 32, scryptOptions(d.ln, d.r, d.p));
      return `$scrypt$ln=${d.ln},r=${d.r},p=${d.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
    }
    case 'firebase-scrypt': {
      const signerKey = randomBytes(d.signerKey.length);
      const separator = d.separator.length > 0 ? randomBytes(d.separator.length) : d.separator;
      const hash = await firebaseScrypt(password, { ...d, signerKey, separator, salt });
      return `$firebase-scrypt$ln=${d.ln},r=${d.r}$${separator.toString('base64')}$${signerKey.toString('base64')}$${salt.toString('base64')}$${hash.toString('base64')}`;
    }
    case 'pbkdf2': {
      const hash = await pbkdf2(Buffer.from(password), salt, d.iterations, d.hash.length, DIGESTS[d.digest]);
      return `$pbkdf2-${d.digest}$i=${d.iterations}$${salt.toString('base64')}$${hash.toString('base64')}`;
    }
    case 'salted-sha': {
      const hash = createHash(d.digest)
        .update(Buffer.concat([salt, Buffer.from(password)]))
        .digest();
      return `$salted-${d.digest}$pre$${salt.toString('base64')}$${hash.toString('base64')}`;
    }
    default:
      return undefined;
  }
}

/** The cost parameters of an Argon2 or bcrypt hash, for a sample made by their own libraries. */
export function costOf(
  stored: string,
): { m: number; t: number; p: number; algorithm: 'argon2id' | 'argon2i' } | { cost: number } | undefined {
  const d = decode(stored);
  if (d?.scheme === 'bcrypt') return { cost: d.cost };
  if (d?.scheme === 'argon2id' || d?.scheme === 'argon2i')
    return { m: d.m, t: d.t, p: d.p, algorithm: d.scheme };
  return undefined;
}

/** How an import line describes a hash that is not a self-describing string (docs/import.md). */
export type ImportedPassword =
  | string
  | { format: 'firebase-scrypt'; hash: string; salt: string }
  | {
      format: 'keycloak';
      /** Keycloak's credential: the realm export's `secretData` and `credentialData` (JSON text or objects), or their fields flat. */
      credential: Record<string, unknown>;
    }
  | {
      format: 'salted-sha256' | 'salted-sha512';
      hash: string;
      salt: string;
      saltPosition?: 'pre' | 'post';
      encoding?: 'hex' | 'base64';
    };

/** Firebase's project-wide hash parameters (the console's "password hash parameters"), an import setting. */
export interface FirebaseHashParameters {
  signerKey: string;
  saltSeparator: string;
  rounds: number;
  memCost: number;
}

export type Normalised = { ok: true; stored: string; parsed: ParsedHash } | { ok: false; reason: string };

function objectOf(value: unknown): Record<string, unknown> | undefined {
  if (typeof value === 'string') {
    try {
      const parsed: unknown = JSON.parse(value);
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

function keycloak(credential: Record<string, unknown>): string | undefined {
  const secret = objectOf(credential.secretData) ?? credential;
  const data = objectOf(credential.credentialData) ?? credential;
  const algorithm = data.algorithm;
  const iterations = data.hashIterations;
  const value = secret.value;
  const salt = secret.salt;
  if (typeof value !== 'string' || typeof salt !== 'string' || typeof iterations !== 'number')
    return undefined;
  const digest = { pbkdf2: 'sha1', 'pbkdf2-sha256': 'sha256', 'pbkdf2-sha512': 'sha512' }[String(algorithm)];
  if (!digest) return undefined;
  return `$pbkdf2-${digest}$i=${iterations}$${salt}$${value}`;
}

/**
 * The stored form of an imported password, or why it is refused: an unknown or malformed hash is
 * refused here, at import, with the line's number, never discovered at sign-in.
 */
export function normaliseImportedPassword(
  input: ImportedPassword,
  settings: { firebase?: FirebaseHashParameters; weakHashes: boolean },
): Normalised {
  let stored: string | undefined;
  if (typeof input === 'string') stored = input;
  else if (input.format === 'firebase-scrypt') {
    const f = settings.firebase;
    if (!f)
      return { ok: false, reason: 'a Firebase scrypt hash needs the project hash parameters (--firebase-*)' };
    stored = `$firebase-scrypt$ln=${f.memCost},r=${f.rounds}$${f.saltSeparator}$${f.signerKey}$${input.salt}$${input.hash}`;
  } else if (input.format === 'keycloak') {
    stored = keycloak(input.credential);
    if (!stored)
      return { ok: false, reason: 'the Keycloak credential is not a PBKDF2 credential this service knows' };
  } else {
    const digest = input.format === 'salted-sha256' ? 'sha256' : 'sha512';
    const hash = input.encoding === 'hex' ? Buffer.from(input.hash, 'hex').toString('base64') : input.hash;
    const salt = input.encoding === 'hex' ? Buffer.from(input.salt, 'hex').toString('base64') : input.salt;
    stored = `$salted-${digest}$${input.saltPosition ?? 'pre'}$${salt}$${hash}`;
  }
  const parsed = parseStoredHash(stored);
  if (!parsed) return { ok: false, reason: 'unknown or malformed password hash' };
  if (parsed.weak && !settings.weakHashes) {
    return { ok: false, reason: 'salted SHA hashes are refused unless PASSWORD_WEAK_HASHES=on' };
  }
  return { ok: true, stored, parsed };
}
