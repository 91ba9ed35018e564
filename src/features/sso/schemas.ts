import { Type } from '@sinclair/typebox';
import { Instant } from '../../platform/http/schemas.js';

/** A connection test's result (docs/sso.md, "Testing a connection"): a member's and an operator's. */
const Check = Type.Object(
  {
    check: Type.Union(
      ['flow', 'response', 'email', 'email_verified', 'domain'].map((c) => Type.Literal(c)),
      {
        description:
          'flow: the answer came to a flow started in this browser; response: the SAML response or the ' +
          'OpenID callback and ID token passed every check; email: an email was found; email_verified: ' +
          'the IdP did not say it is unverified (OpenID); domain: its domain is verified by the organization',
      },
    ),
    passed: Type.Boolean(),
    reason: Type.Optional(Type.String({ description: 'why the response was refused' })),
  },
  { additionalProperties: false },
);
export const TestResultSchema = Type.Object(
  {
    connection: Type.Object(
      {
        id: Type.String({ format: 'uuid' }),
        name: Type.String(),
        type: Type.Union([Type.Literal('saml'), Type.Literal('oidc')]),
      },
      { additionalProperties: false },
    ),
    organizationId: Type.String({ format: 'uuid' }),
    testedAt: Instant,
    passed: Type.Boolean({ description: 'every check passed: this person would be signed in' }),
    checks: Type.Array(Check),
    subject: Type.Union([Type.String(), Type.Null()], { description: 'the NameID or the `sub` claim' }),
    nameIdFormat: Type.Union([Type.String(), Type.Null()]),
    email: Type.Union([Type.String(), Type.Null()]),
    attributes: Type.Record(Type.String(), Type.Unknown(), {
      description: 'SAML attributes (arrays of values) or OpenID claims, as the IdP sent them',
    }),
  },
  { additionalProperties: false },
);
