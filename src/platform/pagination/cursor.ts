import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { Problem } from '../problem.js';

/**
 * Signed collection cursors (interface: "Cursor protection").
 *
 * Token: `v1.<keyId>.<base64url(JSON payload)>.<base64url(HMAC-SHA256(secret, "v1.<keyId>.<payload>"))>`.
 * Signed, not encrypted: the payload is readable by the caller, so it carries only a position, never a secret.
 * Rotation replaces the configured key; a cursor minted under another key id fails `collection.cursor_invalid`.
 *
 * Decision order in `decode` (each a distinct, tested rule):
 *  1. not a string / too long / not four segments / unknown version / a segment that is not base64url → invalid
 *  2. key id differs from the current key → invalid
 *  3. signature does not verify under the current key → tampered (checked BEFORE any JSON parsing)
 *  4. payload not base64url JSON of the right shape → invalid
 *  5. route or subject differ from the presenting scope → invalid
 *  6. expired (exp <= now) → expired
 * A thrown Problem never carries the cursor or any of its contents.
 */

export interface CursorKey {
  /** Matches KEY_ID_PATTERN. */
  id: string;
  secret: Buffer;
}

/** What a cursor is bound to: e.g. route 'GET /api/v1/second-factors', subject = identity id. */
export interface CursorScope {
  route: string;
  subject: string;
}

export type CursorPosition = Record<string, string | number>;

export const CURSOR_VERSION = 'v1';
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
export const DEFAULT_CURSOR_TTL_SECONDS = 900;
export const MAX_CURSOR_TTL_SECONDS = 86_400;
/** Same bound as the `after` query parameter. */
export const MAX_CURSOR_LENGTH = 2048;
const MAX_POSITION_KEYS = 16;

const BASE64URL = /^[A-Za-z0-9_-]+$/;

interface Payload {
  /** route */
  r: string;
  /** subject */
  s: string;
  /** expiry, unix seconds */
  e: number;
  /** position */
  p: CursorPosition;
}

function isPositionValue(v: unknown): v is string | number {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A base64url segment without padding; length % 4 === 1 can never be produced by an encoder. */
function isBase64UrlSegment(s: string): boolean {
  return s.length > 0 && s.length % 4 !== 1 && BASE64URL.test(s);
}

function invalid(): Problem {
  return new Problem('collection.cursor_invalid');
}

export class CursorCodec {
  readonly #key: CursorKey;
  readonly #clock: Clock;

  constructor(key: CursorKey, clock: Clock) {
    if (!KEY_ID_PATTERN.test(key.id))
      throw new RangeError('cursor key id must match /^[A-Za-z0-9_-]{1,32}$/');
    if (!Buffer.isBuffer(key.secret) || key.secret.length === 0) {
      throw new RangeError('cursor key secret must be a non-empty Buffer');
    }
    // Copy so a caller mutating its Buffer cannot change the key under us.
    this.#key = { id: key.id, secret: Buffer.from(key.secret) };
    this.#clock = clock;
  }

  get keyId(): string {
    return this.#key.id;
  }

  /** position: small JSON-able object, e.g. { t: '2026-…Z', id: 'uuid' }; ttlSeconds 1..86400. */
  encode(scope: CursorScope, position: CursorPosition, ttlSeconds: number): string {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_CURSOR_TTL_SECONDS) {
      throw new RangeError(`cursor ttl must be an integer in 1..${MAX_CURSOR_TTL_SECONDS}`);
    }
    if (typeof scope.route !== 'string' || typeof scope.subject !== 'string') {
      throw new TypeError('cursor scope route and subject must be strings');
    }
    if (!isPlainObject(position)) throw new TypeError('cursor position must be a plain object');
    const entries = Object.entries(position);
    if (entries.length > MAX_POSITION_KEYS) throw new RangeError('cursor position has too many keys');
    for (const [, v] of entries) {
      if (!isPositionValue(v))
        throw new TypeError('cursor position values must be strings or finite numbers');
    }
    const payload: Payload = {
      r: scope.route,
      s: scope.subject,
      e: this.#nowSeconds() + ttlSeconds,
      p: Object.fromEntries(entries),
    };
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
    const signed = `${CURSOR_VERSION}.${this.#key.id}.${body}`;
    const token = `${signed}.${this.#sign(signed)}`;
    if (token.length > MAX_CURSOR_LENGTH) throw new RangeError('cursor exceeds the maximum length');
    return token;
  }

  /** Throws Problem('collection.cursor_tampered' | 'collection.cursor_invalid' | 'collection.cursor_expired'). */
  decode(scope: CursorScope, cursor: string): CursorPosition {
    // 1. Structure.
    if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH)
      throw invalid();
    const segments = cursor.split('.');
    if (segments.length !== 4) throw invalid();
    const [version, keyId, body, signature] = segments;
    if (version !== CURSOR_VERSION) throw invalid();
    if (!isBase64UrlSegment(body) || !isBase64UrlSegment(signature)) throw invalid();

    // 2. Key: another (older / foreign) key id is unusable, not tampered.
    if (keyId !== this.#key.id) throw invalid();

    // 3. Signature, before the payload is parsed. Compare the canonical encodings so that a signature
    //    segment differing only in unused trailing bits cannot verify.
    const expected = Buffer.from(this.#sign(`${version}.${keyId}.${body}`), 'ascii');
    const presented = Buffer.from(signature, 'ascii');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      throw new Problem('collection.cursor_tampered');
    }

    // 4. Payload shape.
    const payload = parsePayload(body);

    // 5. Binding.
    if (payload.r !== scope.route || payload.s !== scope.subject) throw invalid();

    // 6. Lifetime.
    if (payload.e <= this.#nowSeconds()) throw new Problem('collection.cursor_expired');

    return payload.p;
  }

  #sign(signed: string): string {
    return createHmac('sha256', this.#key.secret).update(signed, 'utf8').digest('base64url');
  }

  #nowSeconds(): number {
    return Math.floor(this.#clock.now().getTime() / 1000);
  }
}

function parsePayload(body: string): Payload {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!isPlainObject(raw)) throw invalid();
  const keys = Object.keys(raw);
  if (keys.length !== 4 || !['r', 's', 'e', 'p'].every((k) => Object.hasOwn(raw, k))) throw invalid();
  const { r, s, e, p } = raw;
  if (typeof r !== 'string' || typeof s !== 'string' || !Number.isSafeInteger(e)) throw invalid();
  if (!isPlainObject(p)) throw invalid();
  const entries = Object.entries(p);
  if (entries.length > MAX_POSITION_KEYS || !entries.every(([, v]) => isPositionValue(v))) throw invalid();
  return { r, s, e: e as number, p: Object.fromEntries(entries) as CursorPosition };
}
