import { type Static, type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import { ConfigError } from '../platform/config-error.js';

export { ConfigError };

/*
 * The kit every section of the configuration is declared with, in src/config/ and in the features
 * that own a section (docs/decisions.md, "The configuration in sections"). Every variable carries
 * its `refusal`: the words after its name in the one line start-up prints when Ajv rejects it.
 * `description` and `shown` (the default as the documentation states it, where the schema's own
 * default is computed or absent) make `docs/configuration.md` (`npm run config:docs`).
 */

/** What every section may read besides its own variables, made once by the loader. */
export interface Shared {
  production: boolean;
  /** DATA_DIR, resolved. */
  dataDir: string;
  /** 32 raw bytes: the root secret (SECRETS_KEY, or the development key). */
  secretsKey: Buffer;
  /** PUBLIC_ORIGIN, or `http://HOST:PORT` outside production. */
  publicOrigin: string;
  /** The keys derived from the root secret; a section reads only the one it may replace. */
  keys: { cursorSigning: Buffer };
}

/**
 * A section: its variables (schema, default, refusal, description), the formats they use, and the
 * one mapping from its validated variables to its part of the configuration. `check` runs once every
 * section is mapped, for a rule that crosses sections; `schema` adds keywords to the whole schema.
 */
export interface Section<P extends TProperties = TProperties, C = unknown> {
  variables: P;
  formats?: Record<string, (value: string) => boolean>;
  map(env: Static<TObject<P>>, shared: Shared): C;
  check?(config: never): void;
  schema?: Record<string, unknown>;
}

export function section<P extends TProperties, C>(declared: Section<P, C>): Section<P, C> {
  return declared;
}

export function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, allErrors: false, verbose: true, strict: true });
  ajv.addKeyword('refusal');
  ajv.addKeyword('shown');
  return ajv;
}

interface Described {
  description: string;
  shown?: string;
}
export const integer = (def: number, minimum: number, maximum: number, doc: Described) =>
  Type.Integer({
    default: def,
    minimum,
    maximum,
    refusal: `must be an integer from ${minimum} to ${maximum}`,
    ...doc,
  });
export const oneOf = <T extends string>(def: T, allowed: readonly T[], doc: Described) =>
  Type.Unsafe<T>({
    type: 'string',
    enum: allowed,
    default: def,
    refusal: `must be one of ${allowed.join(', ')}`,
    ...doc,
  });
export const text = (def: string, doc: Described) => Type.String({ default: def, ...doc });
export const formatted = (format: string, refusal: string, doc: Described) =>
  Type.Optional(Type.String({ format, refusal, ...doc }));

/** An origin is scheme://host[:port] with nothing after it; no wildcard. */
export function parseOrigin(entry: string): string | null {
  if (entry.includes('*')) return null;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password || url.search || url.hash) return null;
  if (entry.replace(/\/$/, '') !== url.origin) return null;
  return url.origin;
}

export function absoluteUrl(value: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** No user name, password or fragment: nothing a link or an image request should carry. */
export function plainUrl(value: string): boolean {
  const url = new URL(value);
  return !url.username && !url.password && !value.includes('#');
}

/**
 * A format holding JSON text that must match `schema`, checked by a non-coercing instance (only
 * the variables themselves are coerced from text).
 */
export function jsonText(schema: TSchema, also: (value: never) => boolean = () => true) {
  let check: ValidateFunction | undefined;
  return (text: string): boolean => {
    check ??= makeAjv(false).compile(schema);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return false;
    }
    return check(value) && also(value as never);
  };
}

/** The formats more than one section uses. */
export const FORMATS: Record<string, (value: string) => boolean> = {
  'http-url': (v) => absoluteUrl(v, ['http:', 'https:']),
  'json-array': (v) => {
    try {
      return Array.isArray(JSON.parse(v));
    } catch {
      return false;
    }
  },
};

/**
 * A JSON array variable whose entries are checked one by one: an invalid entry, or one repeating
 * another's `key`, stops start-up with one line naming it (by its `key`, else its position).
 */
export function checkedEntries<T>(
  variable: string,
  value: string | undefined,
  key: string,
  check: (entry: unknown) => T | string,
  idOf: (checked: T) => string,
): T[] {
  if (!value) return [];
  const entries: T[] = [];
  for (const [index, entry] of (JSON.parse(value) as unknown[]).entries()) {
    const id =
      typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>)[key] : undefined;
    const name = typeof id === 'string' ? `"${id}"` : `#${index + 1}`;
    const checked = check(entry);
    if (typeof checked === 'string') throw new ConfigError(variable, `entry ${name} ${checked}`);
    if (entries.some((e) => idOf(e) === idOf(checked))) {
      throw new ConfigError(variable, `entry ${name} repeats ${key === 'name' ? 'a name' : `a ${key}`}`);
    }
    entries.push(checked);
  }
  return entries;
}
