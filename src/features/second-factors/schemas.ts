import { Type } from '@sinclair/typebox';
import { IdInput, Instant, StoredText, Uuid } from '../../platform/http/schemas.js';
import { Page } from '../../platform/pagination/page.js';

/** A second-factor code is 6 to 8 digits. */
export const totpCode = Type.String({ pattern: '^[0-9]{6,8}$', minLength: 6, maxLength: 8 });

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
