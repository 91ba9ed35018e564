import { Type } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import { codePattern } from '../../platform/crypto/tokens.js';
import { IdInput, Instant, TaggedUnion, Uuid } from '../../platform/http/schemas.js';
import { Page } from '../../platform/pagination/page.js';
import { identifierForms } from '../identities/schemas.js';
import { providerForm } from '../providers/schemas.js';

/**
 * POST /sign-in-methods (docs/api.md, "4.1 Add an address", "4.2 Link a provider"): an identifier
 * form, or the provider form `{ identifierType: "provider", provider, idToken }`, told apart by
 * identifierType. Strict.
 */
export const AddMethodBody = TaggedUnion('identifierType', [
  ...identifierForms({}),
  Type.Object(providerForm, { additionalProperties: false }),
]);

export const ChallengeStarted = Type.Object(
  {
    challengeExpiresAt: Instant,
    challengeDelivery: Type.Object({
      status: Type.Union([Type.Literal('DELIVERED'), Type.Literal('NOT_DELIVERED')]),
      resendable: Type.Boolean(),
    }),
  },
  { additionalProperties: false, description: 'identifier form: a code was sent to the address' },
);

export const ProviderLinked = Type.Object(
  { id: Uuid },
  { additionalProperties: false, description: 'provider form: linked at once' },
);

/** POST /sign-in-methods/confirmations: the code's shape follows the configured format. */
export function confirmationBody(config: Pick<Config, 'verificationCodeFormat' | 'verificationCodeLength'>) {
  return Type.Object(
    {
      code: Type.String({
        pattern: codePattern(config.verificationCodeFormat, config.verificationCodeLength),
        description: 'the code sent to the address being added; lower case is accepted',
      }),
    },
    { additionalProperties: false },
  );
}

export const MethodIdParams = Type.Object({ id: IdInput }, { additionalProperties: false });

/** The kinds of way in a method list names (the owner's and an operator's). */
export const MethodKind = Type.Union([
  Type.Literal('email'),
  Type.Literal('phone'),
  Type.Literal('password'),
  Type.Literal('provider'),
  Type.Literal('passkey'),
]);

export const SignInMethodSchema = Type.Object(
  {
    id: Uuid,
    kind: MethodKind,
    display: Type.Union([Type.String(), Type.Null()], {
      description:
        'masked identifier, provider name, the passkey’s label, or null for the password or an unlabelled passkey',
    }),
    verifiedAt: Instant,
    lastUsedAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);

export const SignInMethodPage = Page(SignInMethodSchema);
