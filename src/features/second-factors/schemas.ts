import { Type } from '@sinclair/typebox';
import { IdInput, Instant, StoredText, Uuid } from '../../platform/http/schemas.js';
import { Page } from '../../platform/pagination/page.js';
import { SessionGrantSchema } from '../sessions/schemas.js';

/** A second-factor code is 6 to 8 digits. */
const totpCode = Type.String({ pattern: '^[0-9]{6,8}$', minLength: 6, maxLength: 8 });

export const EnrolmentBody = Type.Object(
  { label: Type.Optional(StoredText({ maxLength: 120 })) },
  { additionalProperties: false },
);

export const EnrolmentSchema = Type.Object(
  {
    id: Uuid,
    secret: Type.String({ description: 'base32, returned once' }),
    otpauthUri: Type.String({ description: 'otpauth://totp/… with algorithm, digits and period' }),
  },
  { additionalProperties: false },
);

export const ConfirmationBody = Type.Object({ code: totpCode }, { additionalProperties: false });

export const FactorParams = Type.Object({ id: IdInput }, { additionalProperties: false });

export const SecondFactorItemSchema = Type.Object(
  {
    id: Uuid,
    label: Type.Union([Type.String(), Type.Null()]),
    verifiedAt: Instant,
    lastUsedAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);

export const SecondFactorPageSchema = Page(SecondFactorItemSchema);

/**
 * POST /sign-ins/second-factors: the ticket and exactly one of an authenticator code or a recovery
 * code, as two strict forms; both or neither matches no form (400 validation.failed). A recovery
 * code is accepted in either case and with or without its hyphens.
 */
const secondFactorTicket = Type.String({ minLength: 1, maxLength: 512 });
export const SecondStepBody = Type.Union([
  Type.Object({ secondFactorTicket, code: totpCode }, { additionalProperties: false }),
  Type.Object(
    {
      secondFactorTicket,
      recoveryCode: Type.String({
        pattern: '^(?:[A-Za-z0-9]{4}-?){3}[A-Za-z0-9]{4}$',
        minLength: 16,
        maxLength: 19,
      }),
    },
    { additionalProperties: false },
  ),
]);

/** The session grant, inlined: the shared schema is registered inside the sessions plugin. */
export const SecondStepGrantSchema = Type.Object(SessionGrantSchema.properties);
