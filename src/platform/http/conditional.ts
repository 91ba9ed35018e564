import { createHash } from 'node:crypto';

/**
 * Conditional requests (RFC 9110 §8.8.3, §13.1.1, §13.1.2).
 *
 * A handler opts in by calling `conditionalGet`; without it no ETag is sent and If-None-Match has no effect.
 * If-None-Match uses the weak comparison (a match on GET/HEAD → 304, no body). If-Match uses the strong
 * comparison (failure → 412); a weak validator, on either side, never satisfies If-Match.
 *
 * Opaque tags are base64url, so they only contain characters allowed in an entity-tag value
 * (no double quote, backslash or control character).
 */

const OPAQUE_LENGTH = 27;

/** entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE ; etagc = %x21 / %x23-7E / obs-text */
const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7E\x80-\xFF]*)"/;

interface EntityTag {
  weak: boolean;
  opaque: string;
}

function opaqueOf(representation: unknown): string {
  // JSON.stringify(undefined) is undefined: hash it as null so every value gets a tag.
  const json = JSON.stringify(representation) ?? 'null';
  return createHash('sha256').update(json, 'utf8').digest('base64url').slice(0, OPAQUE_LENGTH);
}

/** Weak ETag W/"<base64url sha256 of the JSON>" for a representation. */
export function weakEtag(representation: unknown): string {
  return `W/"${opaqueOf(representation)}"`;
}

function parseTag(value: string): EntityTag | null {
  const m = ENTITY_TAG.exec(value);
  if (!m || m[0].length !== value.length) return null;
  return { weak: m[1] !== undefined, opaque: m[2] };
}

/**
 * Parses `"*"` or `#entity-tag`. Malformed members are ignored (skipped up to the next comma); `*` only
 * counts as the whole field value.
 */
export function parseEntityTagList(header: string): '*' | EntityTag[] {
  const value = header.trim();
  if (value === '*') return '*';
  const tags: EntityTag[] = [];
  let i = 0;
  while (i < value.length) {
    const c = value[i];
    if (c === ',' || c === ' ' || c === '\t') {
      i++;
      continue;
    }
    const m = ENTITY_TAG.exec(value.slice(i));
    if (m) {
      const end = i + m[0].length;
      // A well-formed tag must be followed by optional whitespace and then a comma or the end.
      const rest = /^[ \t]*(,|$)/.exec(value.slice(end));
      if (rest) {
        tags.push({ weak: m[1] !== undefined, opaque: m[2] });
        i = end;
        continue;
      }
    }
    // Malformed member: skip it up to the next comma.
    const comma = value.indexOf(',', i);
    i = comma === -1 ? value.length : comma + 1;
  }
  return tags;
}

function currentTag(etag: string): EntityTag {
  const tag = parseTag(etag);
  if (!tag) throw new TypeError('etag is not a valid entity-tag');
  return tag;
}

/** RFC 9110 weak comparison against an If-None-Match header value (list, '*', W/ prefixes). */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  const current = currentTag(etag);
  if (header === undefined) return false;
  const list = parseEntityTagList(header);
  if (list === '*') return true;
  return list.some((t) => t.opaque === current.opaque);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * For Fastify handlers: sets ETag; returns true when the caller must answer 304 (reply.code(304).send()).
 * Only GET and HEAD answer 304; when `request.method` is given and is anything else this returns false.
 */
export function conditionalGet(
  request: { headers: Record<string, string | string[] | undefined>; method?: string },
  reply: { header(name: string, value: string): unknown },
  representation: unknown,
): boolean {
  const etag = weakEtag(representation);
  reply.header('ETag', etag);
  if (request.method !== undefined && request.method !== 'GET' && request.method !== 'HEAD') return false;
  return ifNoneMatchHits(headerValue(request.headers['if-none-match']), etag);
}

/** What a write presents of the version it saw (If-Match): any version, or a list of tags. */
export type Precondition = { kind: 'any' } | { kind: 'tags'; tags: EntityTag[] };

/** If-Match as a write reads it; absent is `any` (the route decides whether that is allowed). */
export function preconditionOf(headers: Record<string, string | string[] | undefined>): Precondition {
  const header = headerValue(headers['if-match']);
  if (header === undefined) return { kind: 'any' };
  const list = parseEntityTagList(header);
  return list === '*' ? { kind: 'any' } : { kind: 'tags', tags: list };
}

/** Strong comparison (RFC 9110 §13.1.1) of If-Match against the current strong tag `"…"`. */
export function preconditionHolds(pre: Precondition, etag: string): boolean {
  if (pre.kind === 'any') return true;
  const current = currentTag(etag);
  return !current.weak && pre.tags.some((t) => !t.weak && t.opaque === current.opaque);
}

/** A strong ETag `"<base64url sha256>"` of a version's parts (an id and what moves on each write). */
export function strongEtag(...parts: string[]): string {
  return `"${createHash('sha256').update(parts.join('\n'), 'utf8').digest('base64url').slice(0, OPAQUE_LENGTH)}"`;
}
