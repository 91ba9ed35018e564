import { Type } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../platform/crypto/password-policy.js';
import { codePattern } from '../../platform/crypto/tokens.js';
import { Instant } from '../../platform/http/schemas.js';
import { IdentifierForm } from '../identities/schemas.js';

const newPassword = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH });

/** POST /password-changes (docs/api.md, "5. Change the password (signed in)"): strict. */
export const PasswordChangeBody = Type.Object(
  {
    currentPassword: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
    newPassword,
  },
  { additionalProperties: false },
);

/** POST /sign-in-methods/passwords (docs/api.md, "Add a password"): strict. */
export const PasswordAddBody = Type.Object({ newPassword }, { additionalProperties: false });

/** POST /password-recoveries: an identifier form. */
export const RecoveryStartBody = IdentifierForm({});

/** POST /password-recoveries/confirmations: identifier form + code + newPassword. */
export function recoveryConfirmationBody(
  config: Pick<Config, 'verificationCodeFormat' | 'verificationCodeLength'>,
) {
  return IdentifierForm({
    code: Type.String({
      pattern: codePattern(config.verificationCodeFormat, config.verificationCodeLength),
      description: 'the recovery code that was sent; lower case is accepted',
    }),
    newPassword,
  });
}

export const RecoveryChallengeSchema = Type.Object(
  { challengeExpiresAt: Instant },
  { additionalProperties: false },
);
