import { Ajv, type ErrorObject } from 'ajv';
import formatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

const addFormats = formatsModule as unknown as { default: (ajv: Ajv, formats: string[]) => Ajv };

import type { ValidationEntry } from '../problem.js';
import { BINARY_BODY } from './schemas.js';

/**
 * The service's Ajv set-up. `verbose` (errors carry their schema) is for the fuzz suite, which
 * repairs generated bodies from the errors; the service never needs it.
 */
export function makeAjv(coerce: boolean, verbose = false) {
  const ajv = new Ajv({
    verbose,
    // Strict bodies: an undeclared property is an error, never silently dropped.
    removeAdditional: false,
    useDefaults: true,
    // Query strings and paths are text on the wire; JSON bodies are typed and never coerced, so a
    // number sent as a string (or the reverse) is refused.
    coerceTypes: coerce ? 'array' : false,
    allErrors: false,
    // TaggedUnion bodies (schemas.ts): only the form the tag names is checked.
    discriminator: true,
    strict: false,
  });
  addFormats.default(ajv, ['uuid', 'date-time', 'email', 'uri']);
  // IdInput (schemas.ts): the validated text replaces itself with its lower-case form.
  ajv.addKeyword({
    keyword: 'x-lower-case',
    type: 'string',
    modifying: true,
    schemaType: 'boolean',
    compile:
      (on: boolean) =>
      (
        data: string,
        where?: { parentData: Record<string, unknown>; parentDataProperty: string | number },
      ) => {
        if (on && where) where.parentData[where.parentDataProperty] = data.toLowerCase();
        return true;
      },
  });
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  // A body of raw bytes (schemas.ts BinaryBody): its parser made a Buffer, its handler judges it.
  if (httpPart === 'body' && (schema as Record<string, unknown>)[BINARY_BODY] === true) {
    return ((data: unknown) => Buffer.isBuffer(data)) as ReturnType<FastifySchemaCompiler<unknown>>;
  }
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** Also compiles shared schemas referenced by $ref. */
export function addSharedSchema(schema: { $id: string }): void {
  for (const ajv of [bodyAjv, textAjv]) if (!ajv.getSchema(schema.$id)) ajv.addSchema(schema);
}

const LOCATIONS: Record<string, ValidationEntry['location']> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

// Property names come from the client: only plain ones are repeated back.
const SAFE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => (SAFE_NAME.test(p) ? p : '?'))
    .join('.');
  const extra =
    e.keyword === 'required'
      ? (e.params as { missingProperty: string }).missingProperty
      : e.keyword === 'additionalProperties'
        ? (e.params as { additionalProperty: string }).additionalProperty
        : e.keyword === 'discriminator'
          ? (e.params as { tag: string }).tag
          : undefined;
  if (extra === undefined) return base;
  const name = SAFE_NAME.test(extra) ? extra : '(property)';
  return base ? `${base}.${name}` : name;
}

const MESSAGES: Record<string, string> = {
  required: 'is required',
  additionalProperties: 'is not an allowed property',
  type: 'has the wrong type',
  minLength: 'is too short',
  maxLength: 'is too long',
  pattern: 'has the wrong format',
  format: 'has the wrong format',
  enum: 'is not one of the allowed values',
  const: 'is not the allowed value',
  minimum: 'is too small',
  maximum: 'is too large',
  not: 'is not allowed here',
  oneOf: 'does not match exactly one allowed form',
  anyOf: 'does not match an allowed form',
  if: 'does not match the form its type requires',
  minProperties: 'is missing properties',
  maxProperties: 'has too many properties',
};

/**
 * A TaggedUnion's tag that is missing, not text, or names no form is reported as the keyword the
 * same fault gets anywhere else.
 */
function keywordOf(e: ErrorObject): string {
  if (e.keyword !== 'discriminator') return e.keyword;
  const { tagValue } = e.params as { tagValue?: unknown };
  return tagValue === undefined ? 'required' : typeof tagValue === 'string' ? 'enum' : 'type';
}

/** Maps Ajv errors to the interface's entries; the messages are fixed text, never the value. */
export function validationEntries(errors: ErrorObject[], context: string | undefined): ValidationEntry[] {
  const location = LOCATIONS[context ?? 'body'] ?? 'body';
  const seen = new Set<string>();
  const out: ValidationEntry[] = [];
  for (const e of errors) {
    const field = fieldOf(e);
    const keyword = keywordOf(e);
    const key = `${field}|${keyword}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({
      location,
      field,
      code: keyword,
      message: `${field || location} ${MESSAGES[keyword] ?? 'is not valid'}`,
    });
  }
  return out;
}
