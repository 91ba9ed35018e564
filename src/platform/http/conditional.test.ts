import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { conditionalGet, ifNoneMatchHits, parseEntityTagList, weakEtag } from './conditional.js';

const REP = { id: 'f1', kind: 'totp', label: 'Phone' };
const W = weakEtag(REP);
// The strong form of the same tag, as a client may send it in If-None-Match.
const S = W.slice(2);
const OPAQUE = S.slice(1, -1);

function fakeReply() {
  const headers: Record<string, string> = {};
  return {
    headers,
    header(name: string, value: string) {
      headers[name.toLowerCase()] = value;
      return this;
    },
  };
}

describe('weakEtag', () => {
  it('has the documented shape', () => {
    expect(W).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
  });

  it('are deterministic and change with the representation', () => {
    expect(weakEtag({ ...REP })).toBe(W);
    expect(weakEtag({ ...REP, label: 'Tablet' })).not.toBe(W);
  });

  it('tag undefined (no JSON) like null rather than throwing', () => {
    expect(weakEtag(undefined)).toBe(weakEtag(null));
  });

  it('property: the opaque part never contains a double quote, backslash or control character', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const tag of [weakEtag(value)]) {
          const opaque = tag.replace(/^W\//, '').slice(1, -1);
          expect(tag.startsWith('"') || tag.startsWith('W/"')).toBe(true);
          expect(tag.endsWith('"')).toBe(true);
          const forbidden = [...opaque].filter((ch) => {
            const code = ch.charCodeAt(0);
            return code <= 0x20 || code === 0x7f || ch === '"' || ch === '\\';
          });
          expect(forbidden).toEqual([]);
          expect(opaque).toMatch(/^[\x21\x23-\x7E]+$/);
          expect(tag).not.toContain('\\');
          expect(parseEntityTagList(tag)).toEqual([{ weak: tag.startsWith('W/'), opaque }]);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('parseEntityTagList', () => {
  it.each([
    ['*', '*'],
    ['  *  ', '*'],
    ['"a"', [{ weak: false, opaque: 'a' }]],
    ['W/"a"', [{ weak: true, opaque: 'a' }]],
    ['""', [{ weak: false, opaque: '' }]],
    [
      '"a","b"',
      [
        { weak: false, opaque: 'a' },
        { weak: false, opaque: 'b' },
      ],
    ],
    [
      '  "a" ,\tW/"b" ,  "c"  ',
      [
        { weak: false, opaque: 'a' },
        { weak: true, opaque: 'b' },
        { weak: false, opaque: 'c' },
      ],
    ],
    ['"a,b"', [{ weak: false, opaque: 'a,b' }]],
    [',,"a",,', [{ weak: false, opaque: 'a' }]],
    ['abc', []],
    ['"a', []],
    ['w/"a"', []],
    ['W/ "a"', []],
    ['"a"b", "c"', [{ weak: false, opaque: 'c' }]],
    ['"a" "b", "c"', [{ weak: false, opaque: 'c' }]],
    // RFC 9110 etagc admits a backslash (%x5C) when parsing; only generated tags avoid it.
    [
      '"a\\b", "c"',
      [
        { weak: false, opaque: 'a\\b' },
        { weak: false, opaque: 'c' },
      ],
    ],
    ['"a\x01b", "c"', [{ weak: false, opaque: 'c' }]],
    ['"a b", "c"', [{ weak: false, opaque: 'c' }]],
    ['"a", *', [{ weak: false, opaque: 'a' }]],
    ['', []],
  ])('%j → %j', (header, expected) => {
    expect(parseEntityTagList(header)).toEqual(expected);
  });
});

describe('ifNoneMatchHits (weak comparison)', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['*', true],
    [S, true],
    [W, true],
    [`"other", ${W}`, true],
    [`"other" ,  ${S}  `, true],
    [`W/"other", "x"`, false],
    [`${OPAQUE}`, false], // unquoted: malformed, ignored
    [`"${OPAQUE}`, false], // unterminated
    [`w/"${OPAQUE}"`, false], // W/ is case-sensitive
    [`"${OPAQUE.toLowerCase()}"`, false], // opaque comparison is case-sensitive
    [`garbage, ${W}`, true], // malformed member ignored, later member still counts
  ])('%j against the current weak tag → %s', (header, hit) => {
    expect(ifNoneMatchHits(header, W)).toBe(hit);
  });

  it('also compares weakly when the current tag is strong', () => {
    expect(ifNoneMatchHits(W, S)).toBe(true);
    expect(ifNoneMatchHits(S, S)).toBe(true);
    expect(ifNoneMatchHits('W/"nope"', S)).toBe(false);
  });

  it('rejects a malformed current etag (programming error)', () => {
    expect(() => ifNoneMatchHits('*', 'not-quoted')).toThrow(TypeError);
  });
});

describe('conditionalGet', () => {
  it('sets a weak ETag and answers 200 without If-None-Match', () => {
    const reply = fakeReply();
    expect(conditionalGet({ headers: {} }, reply, REP)).toBe(false);
    expect(reply.headers.etag).toBe(W);
  });

  it('answers 304 when If-None-Match matches', () => {
    const reply = fakeReply();
    expect(conditionalGet({ headers: { 'if-none-match': `"x", ${W}` } }, reply, REP)).toBe(true);
    expect(reply.headers.etag).toBe(W);
  });

  it('answers 200 when If-None-Match does not match', () => {
    const reply = fakeReply();
    expect(conditionalGet({ headers: { 'if-none-match': weakEtag({ other: 1 }) } }, reply, REP)).toBe(false);
  });

  it('joins repeated If-None-Match header values', () => {
    const reply = fakeReply();
    expect(conditionalGet({ headers: { 'if-none-match': ['"x"', W] } }, reply, REP)).toBe(true);
  });

  it('answers 304 on HEAD, never on other methods', () => {
    const headers = { 'if-none-match': W };
    expect(conditionalGet({ headers, method: 'HEAD' }, fakeReply(), REP)).toBe(true);
    expect(conditionalGet({ headers, method: 'GET' }, fakeReply(), REP)).toBe(true);
    expect(conditionalGet({ headers, method: 'POST' }, fakeReply(), REP)).toBe(false);
  });
});
