import { type TProperties, Type } from '@sinclair/typebox';
import { TaggedUnion } from '../../platform/http/schemas.js';
import { LOCALES } from '../../shared/locales.js';

/** An identifier is 1..320 characters; country two upper-case letters, phone only. */
const identifier = Type.String({ minLength: 1, maxLength: 320 });
const country = Type.String({ pattern: '^[A-Z]{2}$' });

/**
 * The two identifier forms (email; phone with its country: docs/decisions.md, "Platform"), each a
 * strict object, with `extra` merged into both.
 */
export function identifierForms<P extends TProperties>(extra: P) {
  return [
    Type.Object(
      { identifierType: Type.Literal('email'), identifier, ...extra },
      { additionalProperties: false },
    ),
    Type.Object(
      { identifierType: Type.Literal('phone'), identifier, country, ...extra },
      { additionalProperties: false },
    ),
  ] as const;
}

/**
 * A body in one of the identifier forms: `country` is required with a phone and refused with an
 * email. Further properties (password, code…) are merged in by each route; each is required unless
 * wrapped in `Type.Optional`.
 */
export function IdentifierForm<P extends TProperties>(extra: P) {
  return TaggedUnion('identifierType', [...identifierForms(extra)]);
}

/** The identity's language (migration 0027): one the hosted pages speak (src/shared/locales.ts). */
export const LocaleSchema = Type.Union(
  LOCALES.map((l) => Type.Literal(l)),
  { description: "the identity's language: every email and SMS it receives is written in it" },
);
