import { Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../platform/http/schemas.js';

const channel = Type.Union([
  Type.Literal('second_factor'),
  Type.Literal('recovery_code'),
  Type.Literal('identifier'),
]);

/**
 * `{}` (or no body at all) picks the channel: second_factor when a verified factor exists, else
 * identifier. With a verified factor the step-up must prove it (second_factor or recovery_code);
 * without one only identifier is usable.
 */
export const StepUpBody = Type.Object({ channel: Type.Optional(channel) }, { additionalProperties: false });

export const StepUpChallengeSchema = Type.Object(
  {
    challengeId: Uuid,
    channel,
    challengeExpiresAt: Instant,
    sentTo: Type.Optional(
      Type.String({
        description:
          'the identifier channel only: where the code went, masked as in the sign-in methods list (a***@example.com, +33******78)',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * The code is the authenticator's current code (digits), a recovery code (16 characters, hyphens
 * optional, either case) or the out-of-band code in its configured format (lower case accepted).
 */
export const StepUpConfirmationBody = Type.Object(
  {
    challengeId: IdInput,
    code: Type.String({
      // A TOTP code, a recovery code issued here, or an imported one (8 to 48 letters and digits).
      pattern: '^[A-Za-z0-9](?:-?[A-Za-z0-9]){5,47}$',
      minLength: 6,
      maxLength: 95,
    }),
  },
  { additionalProperties: false },
);

export const ElevationSchema = Type.Object(
  {
    elevationToken: Type.String({ description: 'opaque; send as the x-elevation-token header' }),
    elevationExpiresAt: Instant,
  },
  { additionalProperties: false },
);
