import { Type } from '@sinclair/typebox';
import { SESSION_REFUSALS } from '../../platform/http/auth.js';
import { IdInput, Instant, StoredText, Uuid } from '../../platform/http/schemas.js';
import { Page } from '../../platform/pagination/page.js';
import type { ProblemCode } from '../../platform/problem.js';

/**
 * What a route of one organization that needs a permission answers before its own refusals: no
 * session, an organization the caller is not a member of, a permission the caller's role lacks.
 */
export const PERMISSION_REFUSALS: ProblemCode[] = [
  ...SESSION_REFUSALS,
  'organization.not_found',
  'organization.permission_denied',
];

/** An organization's name: 1 to 100 characters, not only spaces. */
export const Name = StoredText({ maxLength: 100, visible: true });
export const Slug = Type.String({
  pattern: '^[a-z0-9-]{2,48}$',
  description: '2 to 48 lowercase letters, digits and hyphens; unique',
});
export const RoleName = Type.String({
  pattern: '^[a-z][a-z0-9_-]{1,31}$',
  description: 'owner, admin, member, or a role of ORGANIZATION_ROLES',
});

/** POST /organizations. Strict. */
export const CreateBody = Type.Object({ name: Name, slug: Slug }, { additionalProperties: false });

/** PATCH /organizations/{organizationId}: at least one member. Strict. */
export const UpdateBody = Type.Object(
  { name: Type.Optional(Name), requireSecondFactor: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, minProperties: 1 },
);

export const RoleBody = Type.Object({ role: RoleName }, { additionalProperties: false });

export const TransferBody = Type.Object({ identityId: IdInput }, { additionalProperties: false });

export const OrganizationParams = Type.Object({ organizationId: IdInput }, { additionalProperties: false });
export const MemberParams = Type.Object(
  { organizationId: IdInput, identityId: IdInput },
  { additionalProperties: false },
);

export const OrganizationSchema = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    slug: Type.String(),
    requireSecondFactor: Type.Boolean(),
    requireSso: Type.Boolean({
      description:
        'whether the people of its verified domains sign in only through its IdP (docs/sso.md, "Require SSO"); set at PUT /organizations/{id}/sso-requirement',
    }),
    createdAt: Instant,
    updatedAt: Instant,
    role: Type.String({ description: "the caller's role" }),
    permissions: Type.Array(Type.String(), { description: "the caller's permissions here" }),
    roles: Type.Array(
      Type.Object({
        name: Type.String(),
        displayName: Type.Record(Type.String(), Type.String(), {
          description:
            "the role's display name by language (en, fr), from ORGANIZATION_ROLES; empty for the built-in " +
            'roles and for a configured role without one',
        }),
        assignable: Type.Boolean({ description: 'whether the caller may grant (and take away) this role' }),
      }),
      { description: 'every role of the deployment, built-in first, as the pages offer them' },
    ),
  },
  { $id: 'Organization' },
);

export const MembershipSchema = Type.Object({
  id: Uuid,
  name: Type.String(),
  slug: Type.String(),
  role: Type.String(),
  roleDisplayName: Type.Record(Type.String(), Type.String(), {
    description: "a configured role's display name by language (ORGANIZATION_ROLES); empty otherwise",
  }),
  requireSecondFactor: Type.Boolean(),
  active: Type.Boolean({ description: "the calling session's active organization" }),
});
export const MembershipPageSchema = Page(MembershipSchema);

export const MemberSchema = Type.Object({
  identityId: Uuid,
  role: Type.String(),
  joinedAt: Instant,
  display: Type.Union([Type.String(), Type.Null()], {
    description:
      "the member's first verified identifier: as it is for a caller with members:manage, masked " +
      '(a***@example.com) for anyone else; null when it has none',
  }),
  masked: Type.Boolean({ description: 'whether `display` is masked (the caller lacks members:manage)' }),
  name: Type.Union([Type.String(), Type.Null()], {
    description:
      "the member's name (display name, else given and family names) for a caller with members:manage; " +
      'null for anyone else, or when the member set none',
  }),
});
export const MemberPageSchema = Page(MemberSchema);

export const MemberRoleSchema = Type.Object({ identityId: Uuid, role: Type.String() });
