import { type TSchema, type TUnion, Type } from '@sinclair/typebox';
import { CATALOGUE, type ProblemCode } from '../problem.js';

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    retryable: Type.Boolean(),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          location: Type.String(),
          field: Type.String(),
          code: Type.String(),
          message: Type.String(),
        }),
      ),
    ),
    hookMessage: Type.Optional(
      Type.String({
        description: 'hooks.refused only: the deployment’s own words for the refusal, as its hook gave them',
      }),
    ),
    txtRecord: Type.Optional(
      Type.Object(
        { name: Type.String(), value: Type.String() },
        { description: 'organization.domain_unverified only: the DNS TXT record that was expected' },
      ),
    ),
  },
  { $id: 'Problem', title: 'Problem Details (RFC 9457)' },
);

export const Uuid = Type.String({ format: 'uuid' });

/**
 * An id a client sends (path or body): only the canonical 8-4-4-4-12 hex form, in either case
 * (Ajv's `uuid` format also admits `urn:uuid:…`), lower-cased by the validator (`x-lower-case`,
 * validation.ts) so every later comparison and lookup sees one spelling.
 */
export const IdInput = Type.String({
  pattern: '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$',
  'x-lower-case': true,
});
export const Instant = Type.String({ format: 'date-time' });

/**
 * Free text the service stores as a person or operator wrote it (a name, a label). PostgreSQL's
 * text cannot hold U+0000, so it is refused here (400, naming the field) instead of failing the
 * insert (500). `visible` also asks for one character that is not white space.
 */
export function StoredText(options: {
  minLength?: number;
  maxLength: number;
  visible?: boolean;
  description?: string;
}) {
  const { visible, ...bounds } = options;
  return Type.String({
    minLength: 1,
    ...bounds,
    pattern: visible ? '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$' : '^[^\\u0000]*$',
  });
}

/**
 * A body that takes one of several strict object forms told apart by one property (`tag`, a
 * `Type.Literal` in each form). Its TypeScript type is the union of the forms, so a route narrows
 * on the tag instead of asserting; Ajv's discriminator checks only the form the tag names, so a
 * refusal lists that form's faults and none of the others'.
 */
export function TaggedUnion<T extends TSchema[]>(
  tag: string,
  forms: [...T],
  options: { description?: string } = {},
) {
  const { anyOf, ...union } = Type.Union(forms, options);
  // Ajv's discriminator works on oneOf, which TypeBox does not build; the forms are disjoint on the
  // tag, so oneOf and anyOf accept the same bodies, and the type stays TypeBox's union of the forms
  // (which the Fastify type provider reads).
  const schema = {
    ...union,
    type: 'object',
    required: [tag],
    discriminator: { propertyName: tag },
    oneOf: anyOf,
  };
  return schema as unknown as TUnion<T>;
}

/** Success envelope with `data` (docs/architecture.md, "The request path"). */
export function Data<T extends TSchema>(data: T, meta?: TSchema) {
  return Type.Object(meta ? { data, meta } : { data });
}

/** One status's refusals as a response map entry (the OpenAPI document lists their codes). */
export const problemResponse = (codes: ProblemCode[]) => ({
  description: codes.join(', '),
  content: { 'application/problem+json': { schema: Type.Ref(ProblemSchema) } },
});

export interface ResponseOptions {
  /** The route takes a JSON body: 413 and 415 are possible. */
  body?: boolean;
  /** The route is rate limited: 429 is possible. */
  rateLimited?: boolean;
}

/**
 * Builds a route's response map: the success schemas, every refusal the route names, and the
 * statuses every route can answer (400 validation, 404 unknown route never applies to a matched
 * route, 500, 503), so the OpenAPI document lists every status a route can answer.
 */
export function responses(
  success: Record<number, TSchema | { description: string }>,
  codes: ProblemCode[] = [],
  opts: ResponseOptions = {},
): Record<number, unknown> {
  const all: ProblemCode[] = ['validation.failed', ...codes, 'internal.unexpected', 'service.unavailable'];
  if (opts.body) all.push('request.body_too_large', 'request.unsupported_media_type');
  if (opts.rateLimited) all.push('rate_limit.exceeded');
  const byStatus = new Map<number, ProblemCode[]>();
  for (const c of new Set(all)) {
    const s = CATALOGUE[c].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), c]);
  }
  const out: Record<number, unknown> = { ...success };
  for (const [status, list] of byStatus) out[status] = problemResponse(list);
  return out;
}

/** The keyword that marks a route's body as raw bytes (BinaryBody), read by validation.ts. */
export const BINARY_BODY = 'x-binary-body';

/**
 * A body of raw bytes (an uploaded image), not JSON: documented as `format: binary` under each of
 * the route's `consumes` media types, handed to the handler as a Buffer by the route's own content
 * type parser (with its own size limit), and checked only for being bytes (validation.ts); the
 * route's handler judges the content. The route names its media types in `config.binaryBody`
 * (content-type.ts refuses any other with 415).
 */
export function BinaryBody(description: string) {
  return Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description, [BINARY_BODY]: true });
}

// type null makes @fastify/swagger document a response without a body.
export const NoContent = Type.Null({ description: 'No content' });
