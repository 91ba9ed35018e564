import { type Static, Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../../platform/http/schemas.js';
import { Page } from '../../../platform/pagination/page.js';
import { Name, RoleBody, Slug } from '../schemas.js';

/** POST /admin/v1/organizations. Strict. */
export const CreateOrganizationBody = Type.Object(
  { name: Name, slug: Slug, ownerIdentityId: IdInput },
  { additionalProperties: false },
);
export type CreateOrganizationBody = Static<typeof CreateOrganizationBody>;

/** PATCH /admin/v1/organizations/{id}: its name and its policy. Strict; at least one. */
export const UpdateOrganizationBody = Type.Object(
  { name: Type.Optional(Name), requireSecondFactor: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateOrganizationBody = Static<typeof UpdateOrganizationBody>;

/** PUT /admin/v1/organizations/{id}/members/{identityId}. Strict. */
export const MemberRoleBody = RoleBody;

export const OrganizationIdParams = Type.Object({ id: IdInput }, { additionalProperties: false });
export const OrganizationMemberParams = Type.Object(
  { id: IdInput, identityId: IdInput },
  { additionalProperties: false },
);

export const AdminOrganizationItem = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    slug: Type.String(),
    requireSecondFactor: Type.Boolean(),
    requireSso: Type.Boolean({
      description: 'SSO required for the verified domains (docs/sso.md, "Require SSO")',
    }),
    createdBy: Uuid,
    createdAt: Instant,
    updatedAt: Instant,
    disabledAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);
export const AdminOrganizationPage = Page(AdminOrganizationItem);

export const AdminOrganizationDetail = Type.Object(
  {
    ...AdminOrganizationItem.properties,
    memberCount: Type.Integer({ minimum: 0 }),
    ownerCount: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const AdminMemberItem = Type.Object(
  {
    identityId: Uuid,
    role: Type.String(),
    joinedAt: Instant,
    identifier: Type.Union(
      [
        Type.Object(
          {
            type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
            value: Type.String({ description: 'Unmasked' }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: "The member's first verified identifier, unmasked; null when it has none" },
    ),
  },
  { additionalProperties: false },
);
export const AdminMemberPage = Page(AdminMemberItem);

export const AdminMemberRole = Type.Object(
  { identityId: Uuid, role: Type.String() },
  { additionalProperties: false },
);
