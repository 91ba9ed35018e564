import type { ErrorObject } from 'ajv';
import fc from 'fast-check';
import {
  type AuthSpec,
  type BodySpec,
  type ElevationSpec,
  type J,
  type JObject,
  PLACEHOLDER,
  type RequestSpec,
  type Route,
  toJsonText,
} from './support.js';

/**
 * Request generators. Every string a generator means as a secret carries a marker (`fzS` + 12 hex
 * digits, or `fzI…` inside an email address) so the harness can tell when an answer echoes it.
 */

const BODY_LIMIT = 16 * 1024;
const HEX = [...'0123456789abcdef'];
const hex = (n: number) => fc.string({ unit: fc.constantFrom(...HEX), minLength: n, maxLength: n });

export const marker = hex(12).map((h) => `fzS${h}`);
const markedEmail = hex(12).map((h) => `fzI${h}@example.com`);
const label = hex(6).map((h) => `fzL${h}`);

/** A secret of an exact length (marker first, padded), for bounds such as 12..200 or 1..512. */
function secretOfLength(length: number, pad = 'Z'): fc.Arbitrary<string> {
  return marker.map((m) =>
    length <= m.length ? m.slice(0, Math.max(0, length)) : m + pad.repeat(length - m.length),
  );
}

const nested = (depth: number, leaf: J, kind: 'array' | 'object'): J => {
  let v: J = leaf;
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { entries: [['a', v]] };
  return v;
};

const adversarialStrings: fc.Arbitrary<string> = fc.oneof(
  marker.map((m) => `${m}\u0000`),
  marker.map((m) => `\u0000${m}`),
  marker.map((m) => `${m}\ud800`),
  marker.map((m) => `\udfff${m}`),
  marker.map((m) => ` ${m} `),
  marker.map((m) => `${m}\r\n`),
  marker.map((m) => `${m}\u202e\u0301`),
  marker.map((m) => `${m}'; DROP TABLE identities; --`),
  marker.map((m) => `${m}%00../../etc/passwd`),
  marker.map((m) => `\${jndi:ldap://x/${m}}`),
  marker.map((m) => `${m}{{7*7}}<script>`),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '\ufeff',
    'null',
    'undefined',
    'NaN',
    '-0',
    '1e309',
    '[]',
    '{}',
  ),
  // Long enough to push the body near or past 16 KiB on its own.
  fc
    .tuple(marker, fc.integer({ min: 1_000, max: BODY_LIMIT + 64 }))
    .map(([m, n]) => m + 'L'.repeat(n)),
);

const wrongTypes = (plausible: fc.Arbitrary<J>): fc.Arbitrary<J> =>
  fc.oneof(
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.constantFrom<J>(
      { raw: '1e309' },
      { raw: '-0' },
      { raw: '123456789012345678901234567890' },
      { raw: '1E-400' },
      true,
      false,
      null,
    ),
    fc.integer({ min: 0, max: 99_999_999 }).map(String),
    fc.array(plausible, { maxLength: 3 }),
    plausible.map((v): J => ({ entries: [['value', v]] })),
    fc.integer({ min: 50, max: 900 }).map((d) => nested(d, 'x', 'array')),
    fc.integer({ min: 50, max: 500 }).map((d) => nested(d, 1, 'object')),
  );

type Schema = Record<string, unknown>;

function literalValues(s: Schema): J[] {
  const out: J[] = [];
  if (s.const !== undefined) out.push(s.const as J);
  if (Array.isArray(s.enum)) out.push(...(s.enum as J[]));
  for (const key of ['anyOf', 'oneOf']) {
    for (const sub of (s[key] as Schema[] | undefined) ?? []) out.push(...literalValues(sub));
  }
  return out;
}

/** Near-UUID spellings: each must be a 400, never reach the SQL (issue 11). */
const idShapedStrings: fc.Arbitrary<string> = fc.oneof(
  fc.uuid().map((u) => `urn:uuid:${u}`),
  fc.uuid().map((u) => `{${u}}`),
  fc.uuid().map((u) => u.replaceAll('-', '')),
  fc.uuid().map((u) => ` ${u}`),
);

/** Values a client could plausibly send for this property (the handler runs with many of them). */
function plausibleValue(name: string, s: Schema): fc.Arbitrary<J> {
  const literals = literalValues(s);
  if (literals.length > 0) return fc.constantFrom(...literals);
  // An id a client sends (IdInput): canonical in either case, and the near-UUID spellings.
  if (s.format === 'uuid' || s['x-lower-case'] === true) {
    return fc.oneof(
      { arbitrary: fc.uuid(), weight: 3 },
      fc.uuid().map((u) => u.toUpperCase()),
      idShapedStrings,
    );
  }
  const min = typeof s.minLength === 'number' ? s.minLength : 1;
  const max = typeof s.maxLength === 'number' ? s.maxLength : 64;
  switch (name) {
    case 'identifier':
      return fc.oneof(
        fc.constant(PLACEHOLDER.email),
        markedEmail,
        fc.constantFrom('06 12 34 56 78', '+33612345678', '0612345678', '(201) 555-0123', 'not an address'),
      );
    case 'country':
      return fc.constantFrom('FR', 'US', 'GB', 'DE');
    case 'label':
      return label;
    case 'slug':
      // Valid slugs half the time, so creations succeed and their answers are checked too.
      return fc.oneof(
        hex(12).map((h) => `fz-${h}`),
        secretOfLength(Math.min(Math.max(min, 12), max)),
      );
    case 'refreshToken':
      return fc.oneof(fc.constant(PLACEHOLDER.refreshToken), secretOfLength(43));
    case 'idToken':
      return marker.map(
        (m) =>
          `${Buffer.from('{"alg":"RS256","kid":"k"}').toString('base64url')}.${Buffer.from(
            JSON.stringify({ iss: 'https://issuer.example', nonce: m, sub: m }),
          ).toString('base64url')}.${m}`,
      );
    case 'provider':
      return fc.oneof(fc.constantFrom('google', 'test', 'github'), marker);
    case 'code':
      return fc.oneof(
        fc.integer({ min: 0, max: 999_999 }).map((n) => String(n).padStart(6, '0')),
        fc.integer({ min: 0, max: 99_999_999 }).map((n) => String(n).padStart(8, '0')),
        marker.map((m) => m.slice(0, 12)),
        marker.map((m) => m.slice(0, 12).toUpperCase()),
      );
    case 'recoveryCode':
      return marker.map((m) => `${m.slice(3, 7)}-${m.slice(7, 11)}-${m.slice(11, 15)}-fzs0`.toUpperCase());
    default:
      return fc
        .integer({ min: Math.max(min, 12), max: Math.max(min, Math.min(max, 200)) })
        .chain((n) => secretOfLength(n));
  }
}

/** Strings at and around the declared bounds. */
function boundaryValue(name: string, s: Schema): fc.Arbitrary<J> {
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : 2048;
  const lengths = [...new Set([min - 1, min, min + 1, max - 1, max, max + 1, max * 2])].filter((n) => n >= 0);
  const pad = name === 'label' ? 'l' : 'Z';
  return fc
    .tuple(fc.constantFrom(...lengths), fc.boolean())
    .chain(([n, multibyte]) =>
      name === 'label' ? fc.constant('l'.repeat(n)) : secretOfLength(n, multibyte ? 'é' : pad),
    );
}

export function valueFor(name: string, s: Schema, mode: 'plausible' | 'any'): fc.Arbitrary<J> {
  const plausible = plausibleValue(name, s);
  if (mode === 'plausible') return plausible;
  return fc.oneof(
    { arbitrary: plausible, weight: 5 },
    { arbitrary: boundaryValue(name, s), weight: 2 },
    { arbitrary: adversarialStrings, weight: 3 },
    { arbitrary: wrongTypes(plausible), weight: 2 },
  );
}

const POISON_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  '__defineGetter__',
];

const extraKey = (route: Route) =>
  fc.oneof(
    fc.constantFrom(...POISON_KEYS),
    fc.constantFrom('isAdmin', 'identityId', 'role', 'verified', 'data', 'password', 'code', 'x'),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    ...(route.bodyProperties.size > 0 ? [fc.constantFrom(...route.bodyProperties.keys())] : []),
  );

const poisonValue: fc.Arbitrary<J> = fc.oneof(
  fc.constant<J>({ entries: [['isAdmin', true]] }),
  fc.constant<J>({ entries: [['prototype', { entries: [['polluted', true]] }]] }),
  fc.constant<J>({ entries: [['__proto__', { entries: [['polluted', true]] }]] }),
  marker,
  fc.constant<J>(null),
);

/** An object shaped by the route's schema: a subset of its properties, extra and duplicate keys. */
export function guidedObject(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<JObject> {
  const names = [...route.bodyProperties.keys()];
  const fields = names.map((n) =>
    valueFor(n, route.bodyProperties.get(n)!, mode).map((v): [string, J] => [n, v]),
  );
  const base =
    fields.length === 0
      ? fc.constant<[string, J][]>([])
      : fc
          .tuple(...fields)
          .chain((all) =>
            mode === 'plausible'
              ? fc.subarray(all, { minLength: Math.min(all.length, 1) })
              : fc.subarray(all, { minLength: 0 }),
          );
  if (mode === 'plausible') return base.map((entries) => ({ entries }));
  return fc
    .record({
      entries: base,
      extra: fc.array(
        fc.tuple(extraKey(route), fc.oneof(poisonValue, adversarialStrings as fc.Arbitrary<J>)),
        {
          maxLength: 2,
        },
      ),
      duplicate: fc.option(fc.tuple(fc.nat(), adversarialStrings), { nil: undefined }),
      shuffle: fc.boolean(),
    })
    .map(({ entries, extra, duplicate, shuffle }) => {
      const out: [string, J][] = [...entries];
      // Extra keys only now and then, so most bodies reach the handler.
      if (shuffle) out.push(...extra);
      if (duplicate && out.length > 0) {
        const [k] = out[duplicate[0] % out.length];
        out.push([k, duplicate[1]]);
      }
      return { entries: out };
    });
}

function requiredNames(schema: unknown): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Schema;
  const own = Array.isArray(s.required) ? (s.required as string[]) : [];
  const nestedNames = ['anyOf', 'oneOf', 'allOf'].flatMap((k) =>
    ((s[k] as unknown[]) ?? []).flatMap(requiredNames),
  );
  return [...own, ...nestedNames];
}

/**
 * Turns a candidate into a body the documented schema accepts, guided by the validator's errors:
 * adds a missing property, drops an extra or forbidden one, swaps a rejected value for the next
 * one in that property's pool. Gives up (returns the candidate as it stands) after a few steps.
 */
function repair(route: Route, seed: JObject, pools: Map<string, J[]>): JObject {
  const entries = new Map(seed.entries);
  const used = new Map<string, number>();
  const next = (name: string): J | undefined => {
    const pool = pools.get(name) ?? [];
    const i = used.get(name) ?? 0;
    used.set(name, i + 1);
    return pool[i];
  };
  // The conditional branches (if/then/else) only make sense once the discriminators are there.
  for (const name of route.bodyRequired) {
    const value = entries.has(name) ? undefined : next(name);
    if (value !== undefined) entries.set(name, value);
  }
  // One fix per step, from the first error that names something to fix (an `anyOf` reports every
  // branch: the first branch's error may have no remedy while the second's has).
  const fix = (e: ErrorObject): boolean => {
    const top = e.instancePath.split('/')[1];
    if (e.keyword === 'required' && e.instancePath === '') {
      const value = next((e.params as { missingProperty: string }).missingProperty);
      if (value === undefined) return false;
      entries.set((e.params as { missingProperty: string }).missingProperty, value);
      return true;
    }
    if (e.keyword === 'additionalProperties' && e.instancePath === '') {
      return entries.delete((e.params as { additionalProperty: string }).additionalProperty);
    }
    if ((e.keyword === 'not' || e.keyword === 'oneOf') && e.instancePath === '') {
      // A forbidden combination (`not`), or several `oneOf` branches at once: drop one of them.
      const present = requiredNames(e.keyword === 'oneOf' ? { anyOf: e.schema } : e.schema)
        .reverse()
        .find((n) => entries.has(n));
      return present !== undefined && entries.delete(present);
    }
    if (top !== undefined && top !== '') {
      const value = next(top);
      if (value === undefined) entries.delete(top);
      else entries.set(top, value);
      return true;
    }
    return false;
  };
  for (let step = 0; step < 24; step++) {
    const errors = route.bodyErrors(JSON.parse(toJsonText({ entries: [...entries] })));
    if (!errors || errors.length === 0 || !errors.some(fix)) break;
  }
  return { entries: [...entries] };
}

/** A body the route's documented schema accepts (nearly always), built from plausible values. */
export function validObject(route: Route): fc.Arbitrary<JObject> {
  const names = [...route.bodyProperties.keys()];
  if (names.length === 0) return fc.constant({ entries: [] });
  const pools = fc
    .tuple(
      ...names.map((n) =>
        fc.array(plausibleValue(n, route.bodyProperties.get(n)!), { minLength: 16, maxLength: 16 }),
      ),
    )
    .map((all) => new Map(names.map((n, i) => [n, all[i]])));
  return fc.tuple(guidedObject(route, 'plausible'), pools).map(([seed, p]) => repair(route, seed, p));
}

type Mutation = (o: JObject) => JObject;

/** One change to a valid body: an adversarial value, an extra, duplicate or missing key. */
function mutation(route: Route): fc.Arbitrary<Mutation> {
  const names = [...route.bodyProperties.keys()];
  const replace =
    names.length === 0
      ? []
      : [
          {
            arbitrary: fc
              .oneof(
                ...names.map((n) =>
                  valueFor(n, route.bodyProperties.get(n)!, 'any').map((v): [string, J] => [n, v]),
                ),
              )
              .map(
                ([n, v]): Mutation =>
                  (o) => ({ entries: [...o.entries.filter(([k]) => k !== n), [n, v]] }),
              ),
            weight: 6,
          },
        ];
  return fc.oneof(
    ...replace,
    {
      arbitrary: fc.tuple(extraKey(route), fc.oneof(poisonValue, adversarialStrings as fc.Arbitrary<J>)).map(
        ([k, v]): Mutation =>
          (o) => ({ entries: [...o.entries, [k, v]] }),
      ),
      weight: 1,
    },
    {
      arbitrary: fc.tuple(fc.nat(), adversarialStrings).map(
        ([i, v]): Mutation =>
          (o) =>
            o.entries.length === 0 ? o : { entries: [...o.entries, [o.entries[i % o.entries.length][0], v]] },
      ),
      weight: 1,
    },
    {
      arbitrary: fc.nat().map(
        (i): Mutation =>
          (o) => ({ entries: o.entries.filter((_, j) => j !== i % Math.max(1, o.entries.length)) }),
      ),
      weight: 1,
    },
  );
}

function toJ(v: unknown): J {
  if (v === null || typeof v !== 'object') return v as J;
  if (Array.isArray(v)) return v.map(toJ);
  return { entries: Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, toJ(x)]) };
}

/** Bodies as raw bytes: nesting, sizes around the limit, broken UTF-8 and broken JSON. */
function rawBody(route: Route): fc.Arbitrary<Buffer> {
  const stringField =
    [...route.bodyProperties.entries()].find(([, s]) => s.type === 'string')?.[0] ?? 'password';
  const deep = fc
    .record({
      depth: fc.integer({ min: 1_000, max: 8_100 }),
      kind: fc.constantFrom('array', 'object', 'in-field', 'unclosed'),
    })
    .map(({ depth, kind }) => {
      if (kind === 'array') return '['.repeat(depth) + ']'.repeat(depth);
      if (kind === 'object') return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      if (kind === 'in-field') return `{"${stringField}":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      return '['.repeat(depth);
    });
  const nearLimit = fc
    .record({ offset: fc.integer({ min: -3, max: 3 }), multibyte: fc.boolean(), m: marker })
    .map(({ offset, multibyte, m }) => {
      const frame = Buffer.byteLength(`{"${stringField}":"${m}"}`);
      const room = BODY_LIMIT + offset - frame;
      const fill = multibyte ? 'é'.repeat(Math.floor(room / 2)) + (room % 2 ? 'x' : '') : 'x'.repeat(room);
      return `{"${stringField}":"${m}${fill}"}`;
    });
  const badUtf8 = fc
    .record({
      base: guidedObject(route, 'plausible'),
      at: fc.nat(),
      bytes: fc.constantFrom(
        [0xff],
        [0xfe, 0xff],
        [0xc3, 0x28],
        [0xed, 0xa0, 0x80],
        [0xc0, 0xaf],
        [0xe0, 0x80, 0xaf],
        [0xf4, 0x90, 0x80, 0x80],
        [0x00],
        [0xe2, 0x82],
      ),
    })
    .map(({ base, at, bytes }) => {
      const text = Buffer.from(toJsonText(base), 'utf8');
      // Inside a string value where possible: after an opening quote of a value.
      const quotes = [...text.entries()].filter(([, b]) => b === 0x22).map(([i]) => i);
      const pos = quotes.length > 0 ? quotes[at % quotes.length] + 1 : at % (text.length + 1);
      return Buffer.concat([text.subarray(0, pos), Buffer.from(bytes), text.subarray(pos)]);
    });
  const misc = fc.constantFrom(
    '',
    ' ',
    'null',
    'true',
    '0',
    '"x"',
    '[]',
    '{',
    '}',
    '{"a":1}{"b":2}',
    '{"a":1,}',
    "{'a':1}",
    '{a:1}',
    '\ufeff{}',
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":1e309}',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    '{"a":"\u0000"}',
  );
  return fc.oneof(
    deep.map((s) => Buffer.from(s)),
    nearLimit.map((s) => Buffer.from(s)),
    badUtf8,
    misc.map((s) => Buffer.from(s)),
  );
}

/**
 * Properties the API echoes back by design (an organization's name and slug, a passkey's label,
 * the person's own name on PATCH /account):
 * what a client sends there is not a secret, so in every JSON body the marker in their values
 * becomes the label marker `fzL…`, whichever generator (plausible, boundary, adversarial,
 * duplicate key, mutation) put it there. Otherwise a valid name wrapped in a secret marker is a
 * false "response echoes a secret".
 */
const ECHOED = new Set(['label', 'name', 'slug', 'givenName', 'familyName', 'displayName']);

function unmarked(v: J): J {
  if (typeof v === 'string') return v.replace(/fzS([0-9a-f]{12})/gi, 'fzL$1');
  if (Array.isArray(v)) return v.map(unmarked);
  if (v !== null && typeof v === 'object' && 'entries' in v)
    return { entries: v.entries.map(([k, e]): [string, J] => [k, unmarked(e)]) };
  return v;
}

function echoedUnmarked(v: J): J {
  if (Array.isArray(v)) return v.map(echoedUnmarked);
  if (v !== null && typeof v === 'object' && 'entries' in v)
    return {
      entries: v.entries.map(([k, e]): [string, J] => [k, ECHOED.has(k) ? unmarked(e) : echoedUnmarked(e)]),
    };
  return v;
}

export function bodyFor(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<BodySpec> {
  return markedBodyFor(route, mode).map((b) =>
    b.kind === 'json' ? { kind: 'json', value: echoedUnmarked(b.value) } : b,
  );
}

function markedBodyFor(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<BodySpec> {
  if (mode === 'plausible') {
    return route.hasBody
      ? validObject(route).map((value): BodySpec => ({ kind: 'json', value }))
      : fc.constant<BodySpec>({ kind: 'none' });
  }
  // Mostly a valid body with one adversarial change (so odd values reach the handler), sometimes
  // a schema-shaped object of arbitrary values.
  const guided = fc
    .oneof(
      { arbitrary: fc.tuple(validObject(route), mutation(route)).map(([o, m]) => m(o)), weight: 3 },
      { arbitrary: guidedObject(route, 'any'), weight: 1 },
    )
    .map((value): BodySpec => ({ kind: 'json', value }));
  const none = fc.constant<BodySpec>({ kind: 'none' });
  const anyJson = fc.jsonValue({ maxDepth: 4 }).map((v): BodySpec => ({ kind: 'json', value: toJ(v) }));
  const arrayWrapped = guidedObject(route, 'any').map((o): BodySpec => ({ kind: 'json', value: [o] }));
  const raw = rawBody(route).map((bytes): BodySpec => ({ kind: 'raw', bytes }));
  return fc.oneof(
    { arbitrary: guided, weight: route.hasBody ? 8 : 2 },
    { arbitrary: anyJson, weight: 1 },
    { arbitrary: arrayWrapped, weight: 1 },
    { arbitrary: raw, weight: 3 },
    { arbitrary: none, weight: route.hasBody ? 1 : 4 },
  );
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json; charset=utf-16le',
  'application/json;;',
  ' application/json ',
  'application/vnd.api+json',
  'application/problem+json',
  'application/merge-patch+json',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fz',
  'application/xml',
  '',
  'json',
  '*/*',
];

export function contentTypeFor(body: BodySpec, mode: 'plausible' | 'any'): fc.Arbitrary<string | undefined> {
  if (body.kind === 'none') {
    return mode === 'plausible'
      ? fc.constant(undefined)
      : fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 6 },
          { arbitrary: fc.constantFrom('application/json', ...CONTENT_TYPES), weight: 1 },
        );
  }
  if (mode === 'plausible') return fc.constant('application/json');
  return fc.oneof(
    { arbitrary: fc.constant('application/json'), weight: 10 },
    { arbitrary: fc.constantFrom<string | undefined>(undefined, ...CONTENT_TYPES), weight: 3 },
  );
}

// ---------------------------------------------------------------------------------------------
// Credentials

const garbageBearer = fc.oneof(
  marker,
  fc.tuple(marker, marker, marker).map(([a, b, c]) => `${a}.${b}.${c}`),
  fc.string({ unit: 'grapheme-ascii', maxLength: 60 }),
  fc.constantFrom('', ' ', '.', '..', 'a.b.c', 'null', 'undefined', 'e30.e30.', 'e30.e30.e30'),
  fc.integer({ min: 4_000, max: 70_000 }).map((n) => `${'a'.repeat(n)}.b.c`),
);

const authAny: fc.Arbitrary<AuthSpec> = fc.oneof(
  { arbitrary: fc.constant<AuthSpec>('real'), weight: 6 },
  { arbitrary: fc.constant<AuthSpec>('none'), weight: 2 },
  {
    arbitrary: fc.constantFrom<AuthSpec>(
      'real-lowercase-scheme',
      'real-trailing-space',
      'real-twice',
      'alg-none',
      'alg-none-signed',
      'hs256-jwk-json',
      'hs256-jwk-x',
      'rs256',
      'foreign-eddsa',
      'embedded-jwk',
      'kid-injection',
      'tampered-payload',
      'huge-payload',
      'elevation-as-bearer',
      'refresh-as-bearer',
    ),
    weight: 8,
  },
  {
    arbitrary: fc
      .tuple(fc.constantFrom('Bearer', 'Basic', 'Token', 'Bearer  ', 'BEARER', 'Digest', ''), garbageBearer)
      .map(([scheme, value]): AuthSpec => ({ scheme, value })),
    weight: 3,
  },
);

const elevationAny: fc.Arbitrary<ElevationSpec> = fc.oneof(
  { arbitrary: fc.constant<ElevationSpec>('real'), weight: 6 },
  { arbitrary: fc.constant<ElevationSpec>('none'), weight: 2 },
  {
    arbitrary: fc.constantFrom<ElevationSpec>(
      'foreign',
      'empty',
      'huge',
      'real-trailing-space',
      'twice',
      'access-token',
    ),
    weight: 5,
  },
  {
    arbitrary: fc
      .oneof(marker, fc.string({ unit: 'grapheme-ascii', maxLength: 300 }))
      .map((value): ElevationSpec => ({ value })),
    weight: 2,
  },
);

export function authFor(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<AuthSpec> {
  if (mode === 'any') return authAny;
  // A real session in most cases where the route takes one, and in a share of the others.
  return route.bearer
    ? fc.oneof({ arbitrary: fc.constant<AuthSpec>('real'), weight: 4 }, fc.constant<AuthSpec>('none'))
    : fc.oneof({ arbitrary: fc.constant<AuthSpec>('none'), weight: 3 }, fc.constant<AuthSpec>('real'));
}

export function elevationFor(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<ElevationSpec> {
  if (mode === 'any') return elevationAny;
  return route.elevation
    ? fc.oneof(
        { arbitrary: fc.constant<ElevationSpec>('real'), weight: 4 },
        fc.constant<ElevationSpec>('none'),
      )
    : fc.constant<ElevationSpec>('none');
}

const headerValue = fc.string({ unit: 'grapheme-ascii', maxLength: 200 });
const extraHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    fc.tuple(fc.constant('x-request-id'), fc.oneof(marker, headerValue)),
    fc.tuple(
      fc.constantFrom('if-none-match', 'if-match'),
      fc.constantFrom('*', 'W/"x"', '"x"', '"', 'W/', ',,,'),
    ),
    fc.tuple(fc.constant('if-none-match'), headerValue),
    fc.tuple(
      fc.constant('accept'),
      fc.constantFrom('text/html', 'application/xml', '*/*', '', 'application/json;q=0'),
    ),
    fc.tuple(fc.constant('user-agent'), fc.string({ unit: 'grapheme-ascii', maxLength: 2_000 })),
    fc.tuple(fc.constant('x-forwarded-for'), fc.constantFrom('1.2.3.4', 'not-an-ip', '::1, 10.0.0.1', '')),
    fc.tuple(fc.constant('accept-encoding'), fc.constantFrom('gzip', 'br', 'identity;q=0', '*')),
    fc.tuple(fc.constant('origin'), fc.constantFrom('https://evil.example', 'null', '')),
    fc.tuple(
      fc.constant('cookie'),
      marker.map((m) => `session=${m}`),
    ),
  ),
  { maxLength: 3 },
);

// ---------------------------------------------------------------------------------------------
// Paths and queries

const weirdSegment = fc.oneof(
  fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '%2E%2E%2F',
    '%00',
    'a%00b',
    '%',
    '%zz',
    '%C0%AF',
    '%FF',
    '%ED%A0%80',
    '%u0000',
    'null',
    '0',
    '-1',
    '00000000-0000-0000-0000-000000000000',
    'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
    '%20',
    '%2F',
    '%252F',
    '*',
    '{id}',
    ':id',
  ),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => `${u}%00`),
  fc.uuid().map((u) => `${u}extra`),
  // Forms a lenient UUID parser accepts and PostgreSQL's uuid type may too (issue 11: urn:uuid:
  // reached the SQL and answered 500).
  idShapedStrings.map(encodeURIComponent),
  marker,
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  fc.integer({ min: 90, max: 110 }).map((n) => 'x'.repeat(n)),
  fc.constant('y'.repeat(10_000)),
);

export function idFor(mode: 'plausible' | 'any'): fc.Arbitrary<string> {
  const plausible = fc.oneof({ arbitrary: fc.uuid(), weight: 3 }, fc.constant(PLACEHOLDER.identifierId));
  return mode === 'plausible'
    ? plausible
    : fc.oneof({ arbitrary: plausible, weight: 2 }, { arbitrary: weirdSegment, weight: 3 });
}

type PathVariant =
  | 'exact'
  | 'trailing-slash'
  | 'double-slash'
  | 'upper'
  | 'v2'
  | 'v0'
  | 'no-prefix'
  | 'dot'
  | 'dotdot'
  | 'semicolon'
  | 'encoded-slash'
  | 'nul'
  | 'unicode'
  | 'overlong';

const variants: fc.Arbitrary<PathVariant> = fc.oneof(
  { arbitrary: fc.constant<PathVariant>('exact'), weight: 6 },
  {
    arbitrary: fc.constantFrom<PathVariant>(
      'trailing-slash',
      'double-slash',
      'upper',
      'v2',
      'v0',
      'no-prefix',
      'dot',
      'dotdot',
      'semicolon',
      'encoded-slash',
      'nul',
      'unicode',
      'overlong',
    ),
    weight: 6,
  },
);

function applyVariant(path: string, v: PathVariant, unicode: string): string {
  switch (v) {
    case 'exact':
      return path;
    case 'trailing-slash':
      return `${path}/`;
    case 'double-slash':
      return path.replace('/api/v1/', '/api/v1//');
    case 'upper':
      return path.toUpperCase();
    case 'v2':
      return path.replace('/api/v1/', '/api/v2/');
    case 'v0':
      return path.replace('/api/v1/', '/api/');
    case 'no-prefix':
      return path.replace('/api/v1/', '/');
    case 'dot':
      return path.replace('/api/v1/', '/api/v1/./');
    case 'dotdot':
      return path.replace('/api/v1/', '/api/v1/x/../');
    case 'semicolon':
      return `${path};jsessionid=fz`;
    case 'encoded-slash':
      return path.replace('/api/v1/', '/api%2Fv1%2F');
    case 'nul':
      return `${path}%00`;
    case 'unicode':
      return `${path}/${encodeURIComponent(unicode)}`;
    case 'overlong':
      return `${path}/${'o'.repeat(20_000)}`;
  }
}

const LIMITS = [
  '-1',
  '0',
  '1',
  '50',
  '100',
  '101',
  'abc',
  '1e2',
  '0x10',
  '1.5',
  '',
  ' 1',
  '1 ',
  'NaN',
  'Infinity',
  'true',
  'null',
  '[]',
  '9'.repeat(30),
];

const queryPair: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(fc.constant('limit'), fc.constantFrom(...LIMITS)),
  fc.tuple(fc.constant('cursorTtl'), fc.constantFrom(...LIMITS, '86400', '86401', '900')),
  fc.tuple(
    fc.constant('after'),
    fc.oneof(
      marker,
      fc.constantFrom(1, 2047, 2048, 2049, 5_000).chain((n) => secretOfLength(n, 'A')),
      fc.tuple(marker, marker).map(([a, b]) => `v1.${a}.${b}.${a}`),
      fc.constantFrom('a.b.c.d', 'v1...', '....', '%00', '\u0000', 'eyJ0IjoxfQ', 'v1.k.eyJ9.sig'),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
    ),
  ),
  fc.tuple(
    fc.constantFrom(
      'foo',
      'sort',
      'filter',
      'order',
      '__proto__',
      'constructor',
      'prototype',
      'limit[]',
      '__proto__[polluted]',
      'constructor[prototype][polluted]',
      'a[b][c]',
      '',
    ),
    fc.oneof(marker, fc.constantFrom('1', 'true', 'identities.password_hash', '')),
  ),
);

export const queryFor = (mode: 'plausible' | 'any', route: Route): fc.Arbitrary<string> => {
  if (mode === 'plausible') {
    if (route.queryNames.length === 0) return fc.constant('');
    return fc.option(
      fc.integer({ min: 1, max: 100 }).map((n) => `limit=${n}`),
      { nil: '' },
    );
  }
  return fc
    .record({
      pairs: fc.array(queryPair, { maxLength: 4 }),
      raw: fc.boolean(),
      junk: fc.option(fc.constantFrom('&&&', '=', '&=&', '%', '%zz', 'a=%FF', 'limit', '?', '#'), {
        nil: undefined,
      }),
    })
    .map(({ pairs, raw, junk }) => {
      const parts = pairs.map(([k, v]) =>
        raw ? `${k}=${v.replace(/[#\s]/g, '+')}` : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`,
      );
      if (junk) parts.push(junk);
      return parts.join('&');
    });
};

export function pathFor(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<string> {
  const withId = fc
    .tuple(...route.pathParams.map(() => idFor(mode)))
    .map((ids) => route.pathParams.reduce((p, name, i) => p.replace(`{${name}}`, ids[i]), route.path));
  const base = route.pathParams.length > 0 ? withId : fc.constant(route.path);
  if (mode === 'plausible') return base;
  return fc
    .tuple(base, variants, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }))
    .map(([p, v, u]) => applyVariant(p, v, u));
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

export function methodFor(route: Route, mode: 'plausible' | 'any'): fc.Arbitrary<string> {
  if (mode === 'plausible') return fc.constant(route.method);
  return fc.oneof({ arbitrary: fc.constant(route.method), weight: 6 }, fc.constantFrom(...METHODS));
}

// ---------------------------------------------------------------------------------------------
// Whole requests: one dimension fuzzed hard, the others plausible, so refusals come from the
// dimension under test and the handler is reached often.

export interface Focus {
  body: 'plausible' | 'any';
  credentials: 'plausible' | 'any';
  target: 'plausible' | 'any';
}

export function requestFor(route: Route, focus: Focus): fc.Arbitrary<RequestSpec> {
  return fc
    .record({
      method: methodFor(route, focus.target),
      path: pathFor(route, focus.target),
      query: queryFor(focus.target, route),
      body: bodyFor(route, focus.body),
      auth: authFor(route, focus.credentials),
      elevation: elevationFor(route, focus.credentials),
      headers: focus.credentials === 'any' ? extraHeaders : fc.constant<[string, string][]>([]),
    })
    .chain((r) =>
      contentTypeFor(r.body, focus.body).map((contentType) =>
        // fast-check prints counterexamples with this: long strings and bodies are shortened.
        Object.assign<RequestSpec, object>(
          { ...r, contentType },
          { [fc.toStringMethod]: () => describeSpec(r, contentType) },
        ),
      ),
    );
}

function shorten(text: string): string {
  return text.length > 160 ? `${text.slice(0, 120)}…(${text.length} chars)` : text;
}

export function describeSpec(
  spec: Omit<RequestSpec, 'contentType'>,
  contentType: string | undefined,
): string {
  const body =
    spec.body.kind === 'none'
      ? '(none)'
      : shorten(spec.body.kind === 'raw' ? spec.body.bytes.toString('latin1') : toJsonText(spec.body.value));
  return JSON.stringify({ ...spec, contentType, body }, (_k, v) =>
    typeof v === 'string' && v !== body ? shorten(v) : v,
  );
}
