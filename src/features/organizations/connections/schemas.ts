import { Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../../platform/http/schemas.js';
import { Page } from '../../../platform/pagination/page.js';

const Attribute = Type.String({ minLength: 1, maxLength: 256 });

const AttributeMapping = Type.Object(
  {
    email: Type.Optional(Attribute),
    givenName: Type.Optional(Attribute),
    familyName: Type.Optional(Attribute),
  },
  {
    additionalProperties: false,
    description:
      'the IdP attribute (SAML) or claim (OpenID) carrying each field; without `email`, the NameID (SAML) or the `email` claim',
  },
);

const SamlInput = Type.Object(
  {
    metadataXml: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024 * 1024, description: 'the IdP metadata document itself' }),
    ),
    metadataUrl: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description:
          'an https address the metadata is read from (once, now: timeout SSO_METADATA_TIMEOUT_MS, 1 MiB)',
      }),
    ),
    idpEntityId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    ssoUrl: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: 'the IdP’s HTTP-Redirect single sign-on URL',
      }),
    ),
    signingCertificates: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 16384 }), {
        minItems: 1,
        maxItems: 4,
        description: 'PEM or base64 DER; replaces the set (a rotation sends the current and the next)',
      }),
    ),
    wantEncrypted: Type.Optional(Type.Boolean()),
    allowIdpInitiated: Type.Optional(
      Type.Boolean({
        description: 'unsolicited responses accepted (the person still confirms on a page); default false',
      }),
    ),
  },
  { additionalProperties: false },
);

const OidcInput = Type.Object(
  {
    issuer: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    clientSecret: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'sealed; never shown again' }),
    ),
  },
  { additionalProperties: false },
);

const GroupRoles = Type.Array(
  Type.Object(
    {
      group: Type.String({ minLength: 1, maxLength: 256 }),
      role: Type.String({ minLength: 1, maxLength: 32 }),
    },
    { additionalProperties: false },
  ),
  {
    maxItems: 100,
    description:
      'group value → organization role, in order: the first group the person is in decides; none: `defaultRole`. Never owner; a member may only name roles they could grant',
  },
);
const GroupAttribute = Type.Union([Type.String({ minLength: 1, maxLength: 256 }), Type.Null()], {
  description:
    'the IdP attribute (claim) carrying the groups; set, the member’s role follows `groupRoles` at every sign-in (an owner is left as they are); null: roles do not follow groups',
});

const Common = {
  name: Type.String({ minLength: 1, maxLength: 120 }),
  enabled: Type.Boolean({ description: 'only an enabled connection signs anyone in (default false)' }),
  defaultRole: Type.String({
    minLength: 1,
    maxLength: 32,
    description:
      'the role a person signed in through the connection is made a member with (default member; never owner)',
  }),
  attributeMapping: AttributeMapping,
  groupAttribute: GroupAttribute,
  groupRoles: GroupRoles,
};

export const ConnectionCreateBody = Type.Object(
  {
    type: Type.Union([Type.Literal('saml'), Type.Literal('oidc')]),
    name: Common.name,
    enabled: Type.Optional(Common.enabled),
    defaultRole: Type.Optional(Common.defaultRole),
    attributeMapping: Type.Optional(Common.attributeMapping),
    groupAttribute: Type.Optional(Common.groupAttribute),
    groupRoles: Type.Optional(Common.groupRoles),
    saml: Type.Optional(SamlInput),
    oidc: Type.Optional(OidcInput),
  },
  { additionalProperties: false },
);

export const ConnectionUpdateBody = Type.Object(
  {
    name: Type.Optional(Common.name),
    enabled: Type.Optional(Common.enabled),
    defaultRole: Type.Optional(Common.defaultRole),
    attributeMapping: Type.Optional(Common.attributeMapping),
    groupAttribute: Type.Optional(Common.groupAttribute),
    groupRoles: Type.Optional(Common.groupRoles),
    saml: Type.Optional(SamlInput),
    oidc: Type.Optional(OidcInput),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ConnectionParams = Type.Object(
  { organizationId: IdInput, connectionId: IdInput },
  { additionalProperties: false },
);

export const ConnectionSchema = Type.Object(
  {
    id: Uuid,
    organizationId: Uuid,
    type: Type.Union([Type.Literal('saml'), Type.Literal('oidc')]),
    name: Type.String(),
    enabled: Type.Boolean(),
    defaultRole: Type.String(),
    attributeMapping: AttributeMapping,
    groupAttribute: Type.Union([Type.String(), Type.Null()]),
    groupRoles: Type.Array(Type.Object({ group: Type.String(), role: Type.String() })),
    saml: Type.Union([
      Type.Object(
        {
          idpEntityId: Type.String(),
          ssoUrl: Type.String(),
          signingCertificates: Type.Array(
            Type.Object(
              {
                certificate: Type.String({ description: 'base64 DER' }),
                sha256: Type.String(),
                notAfter: Instant,
              },
              { additionalProperties: false },
            ),
          ),
          wantEncrypted: Type.Boolean(),
          encryptionCertificate: Type.Union([
            Type.String({ description: 'ours, base64 DER: give it to the IdP' }),
            Type.Null(),
          ]),
          allowIdpInitiated: Type.Boolean(),
          entityId: Type.String({
            description: 'our SP entity id for this connection (also its metadata URL)',
          }),
          metadataUrl: Type.String(),
          acsUrl: Type.String({ description: 'our Assertion Consumer Service (HTTP-POST)' }),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
    oidc: Type.Union([
      Type.Object(
        {
          issuer: Type.String(),
          clientId: Type.String(),
          clientSecretSet: Type.Boolean(),
          redirectUri: Type.String({
            format: 'uri',
            description: 'give this to the IdP as the redirect (callback) URI',
          }),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
    createdAt: Instant,
    updatedAt: Instant,
  },
  { additionalProperties: false },
);
export const ConnectionPageSchema = Page(ConnectionSchema);
