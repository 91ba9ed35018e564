import { type Static, Type } from '@sinclair/typebox';

/**
 * One line of an import or export file (docs/import.md, "The format"): one identity, as NDJSON.
 * The same schema validates an import line, describes an export line and is served at
 * GET /admin/v1/imports/schema.
 */

const Text = (max: number, description?: string) =>
  Type.String({ minLength: 1, maxLength: max, ...(description ? { description } : {}) });

const Name = Type.Union([Type.String({ maxLength: 100 }), Type.Null()]);

export const ImportedPasswordSchema = Type.Union(
  [
    Type.String({
      minLength: 1,
      maxLength: 1024,
      description:
        'a self-describing hash: bcrypt ($2a$, $2b$, $2y$), Argon2 PHC ($argon2id$, $argon2i$), scrypt PHC ($scrypt$ln=…,r=…,p=…$salt$hash), Django PBKDF2 (pbkdf2_sha256$…, pbkdf2_sha1$…), $pbkdf2-sha1|sha256|sha512$i=…$salt$hash, or a stored form written by this service',
    }),
    Type.Object(
      { format: Type.Literal('firebase-scrypt'), hash: Text(512), salt: Text(512) },
      {
        additionalProperties: false,
        description: "Firebase's modified scrypt; the project's hash parameters are import settings",
      },
    ),
    Type.Object(
      {
        format: Type.Literal('keycloak'),
        credential: Type.Object(
          {},
          {
            additionalProperties: true,
            description: "Keycloak's password credential as the realm export writes it",
          },
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        format: Type.Union([Type.Literal('salted-sha256'), Type.Literal('salted-sha512')]),
        hash: Text(512),
        salt: Type.String({ maxLength: 512 }),
        saltPosition: Type.Optional(Type.Union([Type.Literal('pre'), Type.Literal('post')])),
        encoding: Type.Optional(Type.Union([Type.Literal('hex'), Type.Literal('base64')])),
      },
      { additionalProperties: false, description: 'only with PASSWORD_WEAK_HASHES=on' },
    ),
  ],
  { description: 'the password hash as the source kept it; never a password' },
);

export const ImportLineSchema = Type.Object(
  {
    externalId: Type.Optional(
      Text(255, "the source system's id: kept, searchable, and the key of an idempotent import"),
    ),
    createdAt: Type.Optional(Type.String({ format: 'date-time' })),
    identifiers: Type.Array(
      Type.Object(
        {
          type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
          value: Text(254, 'an address, or a phone number in E.164 (+…)'),
          verified: Type.Boolean(),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 10 },
    ),
    password: Type.Optional(ImportedPasswordSchema),
    totp: Type.Optional(
      Type.Object(
        {
          secret: Type.String({ pattern: '^[A-Za-z2-7 =]{16,128}$', description: 'base32' }),
          algorithm: Type.Optional(
            Type.Union([Type.Literal('SHA1'), Type.Literal('SHA256'), Type.Literal('SHA512')]),
          ),
          digits: Type.Optional(Type.Integer({ minimum: 6, maximum: 8 })),
          period: Type.Optional(Type.Integer({ minimum: 1, maximum: 300 })),
        },
        { additionalProperties: false },
      ),
    ),
    recoveryCodes: Type.Optional(
      Type.Array(ImportedPasswordSchema, {
        maxItems: 20,
        description:
          'unused recovery codes, each as the source hashed it (any form `password` takes); never a code. The person types a code as the source showed it',
      }),
    ),
    providerLinks: Type.Optional(
      Type.Array(
        Type.Object(
          { provider: Text(255, 'the issuer or the configured provider name'), subject: Text(255) },
          { additionalProperties: false },
        ),
        { maxItems: 20 },
      ),
    ),
    memberships: Type.Optional(
      Type.Array(
        Type.Object(
          {
            organizationId: Type.String({ format: 'uuid' }),
            role: Type.String({ pattern: '^[a-z][a-z0-9_-]{1,31}$' }),
          },
          { additionalProperties: false },
        ),
        { maxItems: 100 },
      ),
    ),
    givenName: Type.Optional(Name),
    familyName: Type.Optional(Name),
    displayName: Type.Optional(Name),
    locale: Type.Optional(Type.Union([Type.Literal('en'), Type.Literal('fr')])),
  },
  { additionalProperties: false, $id: 'ImportLine', title: 'One identity of an import or export file' },
);

export type ImportLine = Static<typeof ImportLineSchema>;
