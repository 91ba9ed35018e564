import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { type TObject, type TProperties, Type } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { publicOriginOf } from './http.js';
import { ConfigError, FORMATS, makeAjv, type Section, type Shared } from './schema.js';

/*
 * The loader: it composes the sections into the one schema (their variables in the order given,
 * which is the order of docs/configuration.md), checks the environment with Ajv, and maps each
 * section's variables into its part of the configuration. Integers are coerced from text, and
 * only integers; an empty variable counts as unset.
 */

export interface LoadOptions {
  /**
   * Where a development root secret comes from when SECRETS_KEY is unset outside production. The
   * start-up passes `loadOrCreateDevKey` (DATA_DIR/secrets.key, written once); without it the key
   * is random and lives as long as the process, so reading the configuration writes nothing.
   */
  devSecretsKey?: (dataDir: string) => Buffer;
}

type AnySection = Section<TProperties, unknown>;
type Intersect<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
type VariablesOf<S> = S extends Section<infer P, unknown> ? P : never;
type MappedOf<S> = S extends Section<TProperties, infer C> ? C : never;

/** The first error's variable, and the refusal written beside the schema that rejected it. */
function refusal(errors: ErrorObject[]): ConfigError {
  const [first] = errors;
  const variable =
    first.keyword === 'required'
      ? (first.params as { missingProperty: string }).missingProperty
      : first.instancePath.split('/')[1];
  const reason = (first.parentSchema as { refusal?: string } | undefined)?.refusal ?? 'is invalid';
  return new ConfigError(variable, reason);
}

/**
 * One schema from the sections, and the function that reads the environment through it. `keys`
 * derives every purpose key from the root secret (the composition root hands in the platform's).
 */
export function compose<const S extends readonly AnySection[], K extends Shared['keys']>(
  sections: S,
  keys: (root: Buffer) => K,
) {
  const properties = Object.assign({}, ...sections.map((s) => s.variables)) as Intersect<
    VariablesOf<S[number]>
  > &
    TProperties;
  const Environment: TObject<typeof properties> = Type.Object(
    properties,
    Object.assign({}, ...sections.map((s) => s.schema ?? {})),
  );
  const ajv = makeAjv(true);
  const formats = Object.assign({ ...FORMATS }, ...sections.map((s) => s.formats ?? {}));
  for (const [name, validate] of Object.entries(formats)) {
    ajv.addFormat(name, { type: 'string', validate: validate as (value: string) => boolean });
  }
  const checkEnvironment = ajv.compile(Environment);

  type Config = Readonly<Intersect<MappedOf<S[number]>> & { keys: K }>;

  /** Reads and validates every variable; throws ConfigError naming the first bad one. */
  function loadConfig(
    env: Record<string, string | undefined> = process.env,
    options: LoadOptions = {},
  ): Config {
    const raw: Record<string, string> = {};
    for (const name of Object.keys(Environment.properties)) {
      const value = env[name];
      if (value !== undefined && value !== '') raw[name] = value;
    }
    // Ajv would also read "0x10", "1e3" or " 5" as integers; an integer variable is plain digits.
    for (const [name, schema] of Object.entries(Environment.properties)) {
      if (schema.type === 'integer' && name in raw && !/^[0-9]{1,10}$/.test(raw[name])) {
        throw new ConfigError(name, schema.refusal);
      }
    }
    if (!checkEnvironment(raw)) throw refusal(checkEnvironment.errors ?? []);
    const e = raw as Record<string, never>;
    const dataDir = resolve(e.DATA_DIR);
    const secretsKey = e.SECRETS_KEY
      ? Buffer.from(e.SECRETS_KEY, 'base64')
      : (options.devSecretsKey?.(dataDir) ?? randomBytes(32));
    // Every key the service uses, each derived once from SECRETS_KEY for its own purpose.
    const derived = keys(secretsKey);
    const shared: Shared = {
      production: e.NODE_ENV === 'production',
      dataDir,
      secretsKey,
      publicOrigin: publicOriginOf(e.HOST, e.PORT, e.PUBLIC_ORIGIN),
      keys: derived,
    };
    const config = Object.assign({}, ...sections.map((s) => s.map(e, shared)), { keys: derived });
    for (const s of sections) s.check?.(config as never);
    return Object.freeze(config) as Config;
  }

  return { Environment, loadConfig };
}
