import { Type } from '@sinclair/typebox';
import { Instant, StoredText } from '../../platform/http/schemas.js';
import { ElevationSchema } from '../step-up/schemas.js';

/*
 * The WebAuthn JSON shapes of the Level 3 specification (what `PublicKeyCredential.toJSON()` and
 * @simplewebauthn/browser produce and what their `parse…OptionsFromJSON` take), so a browser's
 * output goes in as it is. Bodies are strict at every level the specification names; binary
 * values are base64url text.
 */
const Base64Url = (maxLength: number) =>
  Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9_-]+$' });
const Transports = Type.Array(Type.String({ maxLength: 32 }), { maxItems: 8 });
const ExtensionResults = Type.Object({}, { additionalProperties: true, maxProperties: 16 });
const Attachment = Type.Optional(Type.Union([Type.Literal('platform'), Type.Literal('cross-platform')]));

/** RegistrationResponseJSON. */
const RegistrationResponse = Type.Object(
  {
    id: Base64Url(1366),
    rawId: Base64Url(1366),
    type: Type.Literal('public-key'),
    response: Type.Object(
      {
        clientDataJSON: Base64Url(4096),
        attestationObject: Base64Url(16384),
        authenticatorData: Type.Optional(Base64Url(16384)),
        transports: Type.Optional(Transports),
        publicKeyAlgorithm: Type.Optional(Type.Integer()),
        publicKey: Type.Optional(Base64Url(4096)),
      },
      { additionalProperties: false },
    ),
    authenticatorAttachment: Attachment,
    clientExtensionResults: ExtensionResults,
  },
  { additionalProperties: false },
);

/** AuthenticationResponseJSON. */
const AuthenticationResponse = Type.Object(
  {
    id: Base64Url(1366),
    rawId: Base64Url(1366),
    type: Type.Literal('public-key'),
    response: Type.Object(
      {
        clientDataJSON: Base64Url(4096),
        authenticatorData: Base64Url(16384),
        signature: Base64Url(2048),
        userHandle: Type.Optional(Type.Union([Base64Url(128), Type.Null()])),
      },
      { additionalProperties: false },
    ),
    authenticatorAttachment: Attachment,
    clientExtensionResults: ExtensionResults,
  },
  { additionalProperties: false },
);

/** POST /passkeys. */
export const RegisterBody = Type.Object(
  {
    credential: RegistrationResponse,
    label: Type.Optional(StoredText({ maxLength: 120, description: 'a name the person gives the passkey' })),
  },
  { additionalProperties: false },
);

/** POST /sign-ins/passkeys and POST /step-ups/passkeys. */
export const AssertionBody = Type.Object(
  { credential: AuthenticationResponse },
  { additionalProperties: false },
);

const Descriptor = Type.Object(
  { id: Type.String(), type: Type.Literal('public-key'), transports: Type.Optional(Transports) },
  { additionalProperties: false },
);

/** PublicKeyCredentialCreationOptionsJSON, as @simplewebauthn/server makes it. */
const CreationOptions = Type.Object(
  {
    rp: Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false }),
    user: Type.Object(
      {
        id: Type.String({ description: 'the user handle: opaque, base64url of the identity id' }),
        name: Type.String(),
        displayName: Type.String(),
      },
      { additionalProperties: false },
    ),
    challenge: Type.String(),
    pubKeyCredParams: Type.Array(
      Type.Object({ type: Type.Literal('public-key'), alg: Type.Integer() }, { additionalProperties: false }),
    ),
    timeout: Type.Integer(),
    excludeCredentials: Type.Array(Descriptor),
    authenticatorSelection: Type.Object(
      {
        residentKey: Type.String(),
        userVerification: Type.String(),
        requireResidentKey: Type.Boolean(),
        authenticatorAttachment: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
    attestation: Type.String(),
    extensions: Type.Optional(Type.Object({ credProps: Type.Boolean() }, { additionalProperties: false })),
    hints: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

/** PublicKeyCredentialRequestOptionsJSON. */
const RequestOptions = Type.Object(
  {
    rpId: Type.String(),
    challenge: Type.String(),
    timeout: Type.Integer(),
    userVerification: Type.String(),
    allowCredentials: Type.Array(Descriptor, {
      description:
        'empty on sign-in (any discoverable passkey of this site); the caller’s passkeys on step-up',
    }),
    extensions: Type.Optional(Type.Object({}, { additionalProperties: true })),
    hints: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

export const CreationOptionsSchema = Type.Object(
  { options: CreationOptions, expiresAt: Instant },
  { additionalProperties: false },
);
export const RequestOptionsSchema = Type.Object(
  { options: RequestOptions, expiresAt: Instant },
  { additionalProperties: false },
);
export const PasskeyRegistered = Type.Object(
  { id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);
export { ElevationSchema };
