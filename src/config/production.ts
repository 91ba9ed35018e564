import { ARGON2_PRODUCTION_FLOOR_KIB } from './hashing.js';
import { section } from './schema.js';

/**
 * What production asks of the other sections' variables: no variable of its own, one rule.
 */
export const production = section({
  variables: {},
  map: () => ({}),
  schema: {
    // Production refuses to start without its own root secret, without its public origin (the
    // tokens' iss and aud, which every instance must share), or below the OWASP Argon2id floor.
    if: { type: 'object', required: ['NODE_ENV'], properties: { NODE_ENV: { const: 'production' } } },
    then: {
      type: 'object',
      required: ['SECRETS_KEY', 'PUBLIC_ORIGIN'],
      refusal: 'is required in production',
      properties: {
        SECRETS_KEY: { type: 'string' },
        PUBLIC_ORIGIN: { type: 'string' },
        ARGON2_MEMORY_KIB: {
          type: 'integer',
          minimum: ARGON2_PRODUCTION_FLOOR_KIB,
          refusal: `must be at least ${ARGON2_PRODUCTION_FLOOR_KIB} in production`,
        },
      },
    },
  },
});
