import { Type } from '@sinclair/typebox';
import { Instant } from '../../platform/http/schemas.js';

export const RecoveryCodeBatchSchema = Type.Object(
  {
    recoveryCodes: Type.Array(Type.String({ pattern: '^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$' }), {
      minItems: 10,
      maxItems: 10,
    }),
    issuedAt: Instant,
  },
  { additionalProperties: false },
);

export const RecoveryCodeStatusSchema = Type.Object(
  {
    remaining: Type.Integer({ minimum: 0 }),
    issuedAt: Type.Optional({ ...Instant, description: 'absent when remaining is 0' }),
  },
  { additionalProperties: false },
);
