import { Type } from '@sinclair/typebox';
import { Uuid } from '../../../platform/http/schemas.js';

/** PUT …/sso-requirement. Strict. */
export const SsoRequirementBody = Type.Object(
  {
    requireSso: Type.Boolean({
      description:
        'true: the people of the verified domains sign in only through the IdP, and their sessions and grants end now; false: every way in again',
    }),
  },
  { additionalProperties: false },
);

export const SsoRequirementSchema = Type.Object({
  organizationId: Uuid,
  requireSso: Type.Boolean(),
  identitiesSignedOut: Type.Integer({
    minimum: 0,
    description:
      'how many identities of the verified domains this change signed out (0 unless it turned the requirement on)',
  }),
});
