import { Type } from '@sinclair/typebox';
import { Instant, Uuid } from '../../platform/http/schemas.js';

const channel = Type.Union([Type.Literal('second_factor'), Type.Literal('identifier')]);

/** `{}` (or no body at all) picks the channel: second_factor when a verified factor exists. */
export const StepUpBody = Type.Object({ channel: Type.Optional(channel) }, { additionalProperties: false });

export const StepUpChallengeSchema = Type.Object(
  { challengeId: Uuid, channel, challengeExpiresAt: Instant },
  { additionalProperties: false },
);

/**
 * The code is either the authenticator's current code (digits) or the out-of-band code in its
 * configured format; lower case is accepted for alphabetic codes.
 */
export const StepUpConfirmationBody = Type.Object(
  { challengeId: Uuid, code: Type.String({ pattern: '^[A-Za-z0-9]{6,12}$', minLength: 6, maxLength: 12 }) },
  { additionalProperties: false },
);

export const ElevationSchema = Type.Object(
  {
    elevationToken: Type.String({ description: 'opaque; send as the x-elevation-token header' }),
    elevationExpiresAt: Instant,
  },
  { additionalProperties: false },
);
