import { type Static, Type } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../platform/crypto/password-policy.js';
import { codePattern } from '../../platform/crypto/tokens.js';
import { Instant } from '../../platform/http/schemas.js';
import { LOCALES } from '../../shared/locales.js';
import { IdentifierForm } from '../identities/schemas.js';

const SignUpPassword = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH });

/** POST /sign-ups (docs/api.md, "1. Sign up"): identifier form + the password of this registration. */
const SignUpLocale = Type.Optional(
  Type.Union(
    LOCALES.map((l) => Type.Literal(l)),
    {
      description:
        "the language of the page the person signs up on: the code's message and the new identity's language; absent, the request's Accept-Language (else DEFAULT_LOCALE)",
    },
  ),
);

export const SignUpBody = IdentifierForm({ password: SignUpPassword, locale: SignUpLocale });
export type SignUpBody = Static<typeof SignUpBody>;

/**
 * POST /sign-ups as the configuration allows it: with SIGN_IN_CODES_SIGN_UP=on the password may be
 * omitted (sign-up by code, docs/api.md, "Sign up by code"); off, a body without one is the
 * interface's 400 validation.failed, as it always was.
 */
export function signUpBody(config: Pick<Config, 'signInCodes'>) {
  return config.signInCodes.signUp
    ? IdentifierForm({
        password: Type.Optional(
          Type.String({
            minLength: MIN_PASSWORD_LENGTH,
            maxLength: MAX_PASSWORD_LENGTH,
            description:
              'omitted: an account without a password, that signs in by code (SIGN_IN_CODES_SIGN_UP)',
          }),
        ),
        locale: SignUpLocale,
      })
    : SignUpBody;
}

/**
 * POST /sign-ups/confirmations. The code pattern follows the configured format and length, so the
 * schema is built once the configuration is known: a code of the wrong shape is a 400 before any
 * lookup, and the pattern's anchors refuse surrounding whitespace.
 */
export function confirmationBody(
  config: Pick<Config, 'verificationCodeFormat' | 'verificationCodeLength' | 'signInCodes'>,
) {
  const password = Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH });
  return IdentifierForm({
    // Omitted only for a sign-up by code (SIGN_IN_CODES_SIGN_UP=on): the code then opens a session.
    password: config.signInCodes.signUp
      ? Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: MAX_PASSWORD_LENGTH,
            description: 'omitted for a sign-up by code: 201 with a session (or a second-factor ticket)',
          }),
        )
      : password,
    code: Type.String({
      pattern: codePattern(config.verificationCodeFormat, config.verificationCodeLength),
      description:
        config.verificationCodeFormat === 'numeric'
          ? `the ${config.verificationCodeLength}-digit code that was sent`
          : `the ${config.verificationCodeLength}-character ${config.verificationCodeFormat} code that was sent; lower case is accepted`,
    }),
  });
}

/**
 * Sign-up result (docs/api.md, "1. Sign up"). `identity` carries no id and no timestamp, so a first
 * and a repeat registration answer the same bytes apart from the expiry instant.
 */
export const SignUpResult = Type.Object(
  {
    identity: Type.Object({
      identifierType: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
      identifier: Type.String({ description: 'masked: a***@example.com or +33******78' }),
    }),
    challengeDelivery: Type.Object({
      status: Type.Union([Type.Literal('DELIVERED'), Type.Literal('NOT_DELIVERED')]),
      resendable: Type.Boolean({
        description:
          'true only when the failure proves the code never left; then a new sign-up sends a fresh code',
      }),
    }),
    challengeExpiresAt: Instant,
  },
  { additionalProperties: false },
);
export type SignUpResult = Static<typeof SignUpResult>;
