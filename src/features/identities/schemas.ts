import { type TProperties, Type } from '@sinclair/typebox';

/** interface 2.4: identifier 1..320 characters; country two upper-case letters, phone only. */
export const identifierProperties = {
  identifierType: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
  identifier: Type.String({ minLength: 1, maxLength: 320 }),
  country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
};

/**
 * The two identifier forms of contract 1 as one strict object: `country` is required with a phone
 * and refused with an email. Further properties (password, code…) are merged in by each route.
 */
export function IdentifierForm<P extends TProperties>(extra: P, required: (keyof P & string)[] = []) {
  return Type.Object(
    { ...identifierProperties, ...extra },
    {
      additionalProperties: false,
      required: ['identifierType', 'identifier', ...required],
      if: { properties: { identifierType: { const: 'phone' } } },
      then: { required: ['country'] },
      else: { not: { required: ['country'] } },
    },
  );
}
