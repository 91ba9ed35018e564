import { Type } from '@sinclair/typebox';
import { Instant } from '../../platform/http/schemas.js';

export const ProviderNonceSchema = Type.Object(
  {
    nonce: Type.String({
      description:
        'shown once; send hex(SHA-256(nonce)) as the nonce parameter to the provider, whose ID token must carry it byte for byte',
    }),
    expiresAt: Instant,
  },
  { additionalProperties: false },
);

/** POST /step-ups/providers (docs/api.md, "3. Provider step-up"). */
export const ProviderStepUpBody = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    idToken: Type.String({ minLength: 1, maxLength: 8192 }),
  },
  { additionalProperties: false },
);

/** The elevation a provider step-up answers: the step-up's own (docs/api.md, "1. Step up: get an elevation token"). */
export { ElevationSchema } from '../step-up/schemas.js';
