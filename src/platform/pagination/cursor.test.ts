import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { problemBody } from '../http/problem.js';
import { Problem, type ProblemCode } from '../problem.js';
import { CursorCodec, type CursorKey, type CursorScope } from './cursor.js';

const KEY: CursorKey = { id: 'k2026a', secret: Buffer.alloc(32, 7) };
const SCOPE: CursorScope = {
  route: 'GET /api/v1/second-factors',
  subject: '0b9f3c1e-5d7a-4c2e-9f10-3a4b5c6d7e8f',
};
const POSITION = { t: '2026-01-01T00:00:00.000Z', id: 'a1b2c3d4-0000-4000-8000-000000000001' };

function setup(key: CursorKey = KEY) {
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  return { clock, codec: new CursorCodec(key, clock) };
}

/** Runs fn and returns the Problem code it threw; fails the test when it does not throw a Problem. */
function codeOf(fn: () => unknown): ProblemCode {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(Problem);
    return (err as Problem).code;
  }
  throw new Error('expected a Problem to be thrown');
}

/** Swap one character for a different base64url character. */
function flipAt(s: string, i: number): string {
  const c = s[i];
  const replacement = c === 'A' ? 'B' : 'A';
  return s.slice(0, i) + replacement + s.slice(i + 1);
}

/** A validly signed token over an arbitrary payload segment (simulates a holder of the key). */
function signRaw(key: CursorKey, payloadSegment: string): string {
  const signed = `v1.${key.id}.${payloadSegment}`;
  return `${signed}.${createHmac('sha256', key.secret).update(signed).digest('base64url')}`;
}

describe('CursorCodec', () => {
  it('round-trips a position', () => {
    const { codec } = setup();
    const cursor = codec.encode(SCOPE, POSITION, 900);
    expect(codec.decode(SCOPE, cursor)).toEqual(POSITION);
  });

  it('round-trips numeric positions and unicode strings', () => {
    const { codec } = setup();
    const position = { n: 42, f: -1.5, s: 'ünï—çødé' };
    expect(codec.decode(SCOPE, codec.encode(SCOPE, position, 60))).toEqual(position);
  });

  it('has the documented format: four segments, version, key id, base64url JSON payload, HMAC-SHA256', () => {
    const { codec } = setup();
    const cursor = codec.encode(SCOPE, POSITION, 900);
    const segments = cursor.split('.');
    expect(segments).toHaveLength(4);
    const [version, keyId, payload, signature] = segments;
    expect(version).toBe('v1');
    expect(keyId).toBe(KEY.id);
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    expect(decoded).toEqual({
      r: SCOPE.route,
      s: SCOPE.subject,
      e: Date.parse('2026-03-01T12:00:00.000Z') / 1000 + 900,
      p: POSITION,
    });
    const expected = createHmac('sha256', KEY.secret).update(`v1.${KEY.id}.${payload}`).digest('base64url');
    expect(signature).toBe(expected);
    expect(cursor).toMatch(/^[A-Za-z0-9_.-]+$/);
  });

  describe('tampering', () => {
    it('a flipped character in the payload → cursor_tampered', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      const [v, k, p, s] = cursor.split('.');
      for (const i of [0, Math.floor(p.length / 2), p.length - 1]) {
        expect(codeOf(() => codec.decode(SCOPE, [v, k, flipAt(p, i), s].join('.')))).toBe(
          'collection.cursor_tampered',
        );
      }
    });

    it('a flipped character in the signature → cursor_tampered', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      const [v, k, p, s] = cursor.split('.');
      for (const i of [0, 20, s.length - 1]) {
        expect(codeOf(() => codec.decode(SCOPE, [v, k, p, flipAt(s, i)].join('.')))).toBe(
          'collection.cursor_tampered',
        );
      }
    });

    it('a signature that differs only in unused trailing bits still does not verify', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      const [v, k, p, s] = cursor.split('.');
      // 32 bytes → 43 chars; the last char carries 4 data bits and 2 unused bits.
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(s[s.length - 1]);
      const sibling = alphabet[last ^ 1];
      const forged = s.slice(0, -1) + sibling;
      expect(Buffer.from(forged, 'base64url')).toEqual(Buffer.from(s, 'base64url'));
      expect(codeOf(() => codec.decode(SCOPE, [v, k, p, forged].join('.')))).toBe(
        'collection.cursor_tampered',
      );
    });

    it('a truncated or extended signature → cursor_tampered', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => codec.decode(SCOPE, cursor.slice(0, -1)))).toBe('collection.cursor_tampered');
      expect(codeOf(() => codec.decode(SCOPE, `${cursor}AAAA`))).toBe('collection.cursor_tampered');
    });

    it('a different secret under the same key id → cursor_tampered', () => {
      const { codec } = setup();
      const other = setup({ id: KEY.id, secret: Buffer.alloc(32, 8) }).codec;
      const cursor = other.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => codec.decode(SCOPE, cursor))).toBe('collection.cursor_tampered');
    });

    it('checks the signature before parsing: a non-JSON payload with a bad signature is tampered', () => {
      const { codec } = setup();
      const notJson = Buffer.from('not json at all').toString('base64url');
      const sig = createHmac('sha256', Buffer.alloc(32, 9)).update('x').digest('base64url');
      expect(codeOf(() => codec.decode(SCOPE, `v1.${KEY.id}.${notJson}.${sig}`))).toBe(
        'collection.cursor_tampered',
      );
    });
  });

  describe('invalid', () => {
    it('a cursor minted under another key id (rotation) → cursor_invalid, not tampered', () => {
      const { codec: old } = setup({ id: 'k2025z', secret: Buffer.alloc(32, 1) });
      const { codec: current } = setup();
      const cursor = old.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => current.decode(SCOPE, cursor))).toBe('collection.cursor_invalid');
    });

    it('rotation to a new key id with the same secret still invalidates old cursors', () => {
      const { codec: old } = setup({ id: 'old', secret: KEY.secret });
      const { codec: current } = setup({ id: 'new', secret: KEY.secret });
      expect(codeOf(() => current.decode(SCOPE, old.encode(SCOPE, POSITION, 900)))).toBe(
        'collection.cursor_invalid',
      );
    });

    it.each([
      ['garbage', 'not-a-cursor'],
      ['empty string', ''],
      ['only dots', '...'],
      ['3 segments', 'v1.k2026a.eyJ9'],
      ['unknown version', null],
      ['bad base64 in payload', 'v1.k2026a.eyJ+/9=.AAAA'],
      ['bad base64 in signature', 'v1.k2026a.eyJ9.AA==!'],
      ['impossible base64 length', 'v1.k2026a.eyJ9A.AAAA'],
      ['over 2048 characters', `v1.k2026a.${'A'.repeat(2048)}.AAAA`],
    ])('%s → cursor_invalid', (_label, raw) => {
      const { codec } = setup();
      const cursor = raw ?? codec.encode(SCOPE, POSITION, 900).replace(/^v1\./, 'v2.');
      expect(codeOf(() => codec.decode(SCOPE, cursor))).toBe('collection.cursor_invalid');
    });

    it('5 segments (a valid cursor with one more) → cursor_invalid', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => codec.decode(SCOPE, `${cursor}.AAAA`))).toBe('collection.cursor_invalid');
    });

    it('3 segments (a valid cursor minus its signature) → cursor_invalid', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => codec.decode(SCOPE, cursor.split('.').slice(0, 3).join('.')))).toBe(
        'collection.cursor_invalid',
      );
    });

    it.each([
      ['not JSON', Buffer.from('{"r":').toString('base64url')],
      ['JSON array', Buffer.from('[1,2]').toString('base64url')],
      ['JSON null', Buffer.from('null').toString('base64url')],
      [
        'missing expiry',
        Buffer.from(JSON.stringify({ r: SCOPE.route, s: SCOPE.subject, p: {} })).toString('base64url'),
      ],
      [
        'expiry not an integer',
        Buffer.from(JSON.stringify({ r: SCOPE.route, s: SCOPE.subject, e: '9999999999', p: {} })).toString(
          'base64url',
        ),
      ],
      [
        'position value is an object',
        Buffer.from(
          JSON.stringify({ r: SCOPE.route, s: SCOPE.subject, e: 9999999999, p: { t: {} } }),
        ).toString('base64url'),
      ],
      [
        'extra field',
        Buffer.from(
          JSON.stringify({ r: SCOPE.route, s: SCOPE.subject, e: 9999999999, p: {}, x: 1 }),
        ).toString('base64url'),
      ],
    ])('a correctly signed payload of the wrong shape (%s) → cursor_invalid', (_label, segment) => {
      const { codec } = setup();
      expect(codeOf(() => codec.decode(SCOPE, signRaw(KEY, segment)))).toBe('collection.cursor_invalid');
    });

    it('a correctly signed payload of the right shape decodes (control for the shape cases)', () => {
      const { codec } = setup();
      const segment = Buffer.from(
        JSON.stringify({ r: SCOPE.route, s: SCOPE.subject, e: 9999999999, p: { t: 'x' } }),
      ).toString('base64url');
      expect(codec.decode(SCOPE, signRaw(KEY, segment))).toEqual({ t: 'x' });
    });

    it('presented on a different route → cursor_invalid', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => codec.decode({ ...SCOPE, route: 'GET /api/v1/sign-in-methods' }, cursor))).toBe(
        'collection.cursor_invalid',
      );
    });

    it('presented by a different subject → cursor_invalid', () => {
      const { codec } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      expect(codeOf(() => codec.decode({ ...SCOPE, subject: 'someone-else' }, cursor))).toBe(
        'collection.cursor_invalid',
      );
    });

    it('scope is checked before expiry: an expired cursor elsewhere is invalid', () => {
      const { codec, clock } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 60);
      clock.advance(3600);
      expect(codeOf(() => codec.decode({ ...SCOPE, subject: 'other' }, cursor))).toBe(
        'collection.cursor_invalid',
      );
      expect(codeOf(() => codec.decode(SCOPE, cursor))).toBe('collection.cursor_expired');
    });
  });

  describe('expiry', () => {
    it('is usable one second before the ttl and expired at exactly the ttl', () => {
      const { codec, clock } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 900);
      clock.advance(899);
      expect(codec.decode(SCOPE, cursor)).toEqual(POSITION);
      clock.advance(1);
      expect(codeOf(() => codec.decode(SCOPE, cursor))).toBe('collection.cursor_expired');
    });

    it('honours the maximum ttl of 86400 seconds', () => {
      const { codec, clock } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 86_400);
      clock.advance(86_399);
      expect(codec.decode(SCOPE, cursor)).toEqual(POSITION);
      clock.advance(1);
      expect(codeOf(() => codec.decode(SCOPE, cursor))).toBe('collection.cursor_expired');
    });

    it('honours a ttl of 1 second', () => {
      const { codec, clock } = setup();
      const cursor = codec.encode(SCOPE, POSITION, 1);
      expect(codec.decode(SCOPE, cursor)).toEqual(POSITION);
      clock.advance(1);
      expect(codeOf(() => codec.decode(SCOPE, cursor))).toBe('collection.cursor_expired');
    });

    it.each([0, -1, 86_401, 1.5, Number.NaN])('refuses to mint a cursor with ttl %s', (ttl) => {
      const { codec } = setup();
      expect(() => codec.encode(SCOPE, POSITION, ttl)).toThrow(RangeError);
    });
  });

  it('never puts the cursor or its contents into the thrown Problem', () => {
    const { codec, clock } = setup();
    const cursor = codec.encode(SCOPE, POSITION, 60);
    const [v, k, p, s] = cursor.split('.');
    const attempts = [
      [v, k, flipAt(p, 3), s].join('.'),
      cursor.replace(/^v1\./, 'v9.'),
      `${cursor}.x`,
      cursor,
    ];
    clock.advance(120);
    for (const attempt of attempts) {
      let thrown: unknown;
      try {
        codec.decode(SCOPE, attempt);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(Problem);
      const problem = thrown as Problem;
      const serialized = JSON.stringify({
        message: problem.message,
        body: problemBody(problem),
        extra: problem.extra,
      });
      for (const needle of [p, s, POSITION.id, POSITION.t, SCOPE.subject, KEY.id]) {
        expect(serialized).not.toContain(needle);
      }
      expect(problem.cause).toBeUndefined();
    }
  });

  it('rejects a malformed key id at construction', () => {
    const clock = new ManualClock();
    expect(() => new CursorCodec({ id: 'has.dot', secret: KEY.secret }, clock)).toThrow(RangeError);
    expect(() => new CursorCodec({ id: 'x'.repeat(33), secret: KEY.secret }, clock)).toThrow(RangeError);
    expect(() => new CursorCodec({ id: 'ok', secret: Buffer.alloc(0) }, clock)).toThrow(RangeError);
  });
});
