import { Type } from '@sinclair/typebox';
import { Instant } from '../../platform/http/schemas.js';

/** The provider form of POST /sign-ins and POST /sign-in-methods: an ID token from a provider. */
export const providerForm = {
  identifierType: Type.Literal('provider'),
  provider: Type.String({ minLength: 1, maxLength: 64 }),
  idToken: Type.String({ minLength: 1, maxLength: 8192 }),
};

export const ProviderNonceSchema = Type.Object(
  {
    nonce: Type.String({
      description:
        'shown once; send hex(SHA-256(nonce)) as the nonce parameter to the provider, whose ID token must carry it byte for byte',
    }),
    expiresAt: Instant,
  },
  { additionalProperties: false },
);

/** POST /step-ups/providers (docs/api.md, "3. Provider step-up"). */
export const ProviderStepUpBody = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    idToken: Type.String({ minLength: 1, maxLength: 8192 }),
  },
  { additionalProperties: false },
);

/** The elevation a provider step-up answers: the step-up's own (docs/api.md, "1. Step up: get an elevation token"). */
export { ElevationSchema } from '../step-up/schemas.js';

/** GET /providers: one provider offering redirect sign-in. */
export const ProviderSummarySchema = Type.Object(
  {
    name: Type.String({ description: 'the name POST /provider-flows takes' }),
    displayName: Type.String({ description: 'for the button: "Continue with <displayName>"' }),
    preset: Type.Union([
      Type.Literal('google'),
      Type.Literal('microsoft'),
      Type.Literal('apple'),
      Type.Literal('github'),
      Type.Null(),
    ]),
  },
  { additionalProperties: false },
);

/** POST /provider-flows (docs/providers.md, "Start from your own pages"). */
export const ProviderFlowBody = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 63 }),
    intent: Type.Union([Type.Literal('sign_in'), Type.Literal('link'), Type.Literal('step_up')]),
    returnTo: Type.String({
      minLength: 1,
      maxLength: 300,
      description:
        'a hosted page, as a path and fragment: `/account/#/sign-in`, `/account/#/sign-up`, `/account/#/security`, `/account/#/devices` or `/account/#/authorize/<uid>`',
    }),
  },
  { additionalProperties: false },
);

export const ProviderFlowSchema = Type.Object(
  {
    authorizationUrl: Type.String({ description: 'navigate the browser here' }),
    expiresAt: Instant,
  },
  { additionalProperties: false },
);

/** POST /provider-handoffs. */
export const ProviderHandoffBody = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);
