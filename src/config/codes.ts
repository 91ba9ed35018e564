import { integer, oneOf, section } from './schema.js';

/** The alphabets of out-of-band codes (the platform's `generateCode` takes the same names). */
export type CodeFormat = 'numeric' | 'alphabetic' | 'alphanumeric';
export type TotpAlgorithm = 'SHA1' | 'SHA256' | 'SHA512';

/** The codes people type: out-of-band codes, and TOTP at enrolment. */
export const codes = section({
  variables: {
    VERIFICATION_CODE_FORMAT: oneOf<CodeFormat>('numeric', ['numeric', 'alphabetic', 'alphanumeric'], {
      description: 'out-of-band codes: `numeric`, `alphabetic` or `alphanumeric`',
    }),
    VERIFICATION_CODE_LENGTH: integer(6, 6, 12, { description: 'out-of-band code length, 6..12' }),
    TOTP_ALGORITHM: oneOf<TotpAlgorithm>('SHA1', ['SHA1', 'SHA256', 'SHA512'], {
      description: 'TOTP algorithm at enrolment; an enrolled factor keeps its own',
    }),
    TOTP_DIGITS: integer(6, 6, 8, { description: 'TOTP digits at enrolment, 6..8' }),
    TOTP_PERIOD: integer(30, 15, 120, { description: 'TOTP period at enrolment, 15..120 seconds' }),
  },
  map: (e) => ({
    verificationCodeFormat: e.VERIFICATION_CODE_FORMAT,
    verificationCodeLength: e.VERIFICATION_CODE_LENGTH,
    totpAlgorithm: e.TOTP_ALGORITHM,
    totpDigits: e.TOTP_DIGITS,
    totpPeriod: e.TOTP_PERIOD,
  }),
});
