import { Type } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import { codePattern } from '../../platform/crypto/tokens.js';
import { Instant, TaggedUnion } from '../../platform/http/schemas.js';
import { IdentifierForm, identifierForms } from '../identities/schemas.js';
import { providerForm } from '../providers/schemas.js';
import { totpCode } from '../second-factors/schemas.js';
import { SessionGrantSchema } from '../sessions/schemas.js';

const password = Type.String({ minLength: 1, maxLength: 200 });

/**
 * POST /sign-ins: the password path (an identifier form + password) or the provider path
 * ({ identifierType: "provider", provider, idToken }), told apart by identifierType. Strict.
 */
export const SignInBody = TaggedUnion('identifierType', [
  ...identifierForms({ password }),
  Type.Object(providerForm, { additionalProperties: false }),
]);

/**
 * What a sign-in answers instead of a session when a second step is needed (docs/api.md, "5. Sign
 * in with the second step"). No token.
 */
export const SecondFactorTicketSchema = Type.Object(
  {
    kind: Type.Literal('second_factor_required'),
    secondFactorTicket: Type.String(),
    ticketExpiresAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'SecondFactorTicket' },
);

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
        // Issued here: four groups of four; imported (docs/import.md): 8 to 48 letters and digits,
        // single hyphens between them, as the source showed them.
        pattern: '^[A-Za-z0-9](?:-?[A-Za-z0-9]){7,47}$',
        minLength: 8,
        maxLength: 95,
      }),
    },
    { additionalProperties: false },
  ),
]);

/** The session grant, inlined: the shared schema is registered inside another plugin (`signInRoutes`). */
export const SecondStepGrantSchema = Type.Object(SessionGrantSchema.properties);

/**
 * POST /sign-ins/passkeys/options: no body is needed; an identifier may be sent and changes
 * nothing in the answer (discoverable credentials: the authenticator says whose passkey answers).
 */
export const SignInOptionsBody = Type.Object(
  {
    identifierType: Type.Optional(Type.Union([Type.Literal('email'), Type.Literal('phone')])),
    identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    country: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })),
  },
  { additionalProperties: false },
);

/** A passkey sign-in is two factors: always a session, never a second-factor ticket. */
export const PasskeyGrantSchema = Type.Object(SessionGrantSchema.properties, { additionalProperties: false });

/** POST /sign-ins/codes: an identifier form, strict. */
export const SignInCodeBody = IdentifierForm({});

/** What POST /sign-ins/codes answers, the same for every address: no code, ever. */
export const SentSignInCodeSchema = Type.Object(
  {
    signInCodeId: Type.String({ format: 'uuid', description: 'the id to answer the code at' }),
    codeExpiresAt: Instant,
  },
  { additionalProperties: false },
);

/** POST /sign-ins/codes/{id}: the path's id. */
export const SignInCodeParams = Type.Object(
  { id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);

/**
 * POST /sign-ins/codes/{id}: the identifier form the code was sent to, and the code. The address is
 * what the guess budget is charged to, whether or not an account holds it (as for every code).
 */
export function signInCodeAnswerBody(
  config: Pick<Config, 'verificationCodeFormat' | 'verificationCodeLength'>,
) {
  return IdentifierForm({
    code: Type.String({
      pattern: codePattern(config.verificationCodeFormat, config.verificationCodeLength),
      description: 'the code that was sent; lower case is accepted',
    }),
  });
}

/** POST /sign-ins/links and /sign-ins/links/lookups: what the link carries. */
export const SignInLinkBody = Type.Object(
  {
    signInCodeId: Type.String({ format: 'uuid', description: "the sign-in code's id, from the link" }),
    token: Type.String({ minLength: 1, maxLength: 128, description: "the link's token, from the link" }),
  },
  { additionalProperties: false },
);

/** What a sign-in link's page shows before Continue. */
export const SignInLinkLookupSchema = Type.Object(
  {
    identifierType: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
    maskedIdentifier: Type.String({
      description: 'the address the code was sent to, masked: `a***@example.com`',
    }),
    sameBrowser: Type.Boolean({
      description:
        'whether this browser is the one that asked for the code (its cookie); when false, say so before Continue',
    }),
    codeExpiresAt: Instant,
  },
  { additionalProperties: false },
);

/** GET /sign-ins/codes/{id}/status. */
export const SignInCodeStatusSchema = Type.Object(
  {
    status: Type.Union([
      Type.Literal('pending'),
      Type.Literal('completed'),
      Type.Literal('completed_elsewhere'),
    ]),
  },
  { additionalProperties: false },
);
