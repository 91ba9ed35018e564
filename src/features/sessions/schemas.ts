import { Type } from '@sinclair/typebox';
import { IdInput } from '../../platform/http/schemas.js';
import { Page } from '../../platform/pagination/page.js';

export const RenewalBody = Type.Object(
  { refreshToken: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false },
);

export const SessionGrantSchema = Type.Object(
  {
    kind: Type.Literal('session'),
    accessToken: Type.String(),
    accessTokenExpiresAt: Type.String({ format: 'date-time' }),
    refreshToken: Type.String(),
    sessionExpiresAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'SessionGrant' },
);

/**
 * What the browser-session routes answer: a session grant without its refresh token, which stays
 * in the hosted pages' HttpOnly cookie (docs/security.md, "The hosted pages' cookie").
 */
export const BrowserSessionGrantSchema = Type.Object(
  {
    kind: Type.Literal('session'),
    accessToken: Type.String(),
    accessTokenExpiresAt: Type.String({ format: 'date-time' }),
    sessionExpiresAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'BrowserSessionGrant' },
);

export const SessionContextSchema = Type.Object({
  identityId: Type.String({ format: 'uuid' }),
  sessionId: Type.String({ format: 'uuid' }),
  identifiers: Type.Array(
    Type.Object({
      id: Type.String({ format: 'uuid' }),
      type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
      value: Type.String({ description: 'masked' }),
      verifiedAt: Type.String({ format: 'date-time' }),
    }),
  ),
  methods: Type.Array(Type.String()),
  ssoConnection: Type.Union(
    [
      Type.Object({
        id: Type.String({ format: 'uuid' }),
        name: Type.String(),
        organizationId: Type.String({ format: 'uuid' }),
      }),
      Type.Null(),
    ],
    {
      description:
        "the organization's connection this session was signed in through (docs/sso.md), else null",
    },
  ),
  organizations: Type.Array(
    Type.Object({
      id: Type.String({ format: 'uuid' }),
      name: Type.String(),
      slug: Type.String(),
      role: Type.String(),
      groups: Type.Array(Type.String(), {
        description:
          'the SCIM groups the identity belongs to there that map to no role, by name (docs/scim.md)',
      }),
      active: Type.Boolean({ description: "the calling session's active organization" }),
    }),
    {
      description:
        "the identity's memberships, newest first (at most 100; GET /organizations pages them all)",
    },
  ),
});

/**
 * What switching the active organization answers: a new access token, no refresh token (the
 * session's own is not rotated by a switch).
 */
export const OrganizationSwitchSchema = Type.Object({
  kind: Type.Literal('session'),
  accessToken: Type.String(),
  accessTokenExpiresAt: Type.String({ format: 'date-time' }),
  sessionExpiresAt: Type.String({ format: 'date-time' }),
});

/** POST /session/active-organization: an organization id, or null to act in none. Strict. */
export const ActiveOrganizationBody = Type.Object(
  {
    organizationId: Type.Union([IdInput, Type.Null()]),
  },
  { additionalProperties: false },
);

export const DeviceSchema = Type.Object(
  {
    description: Type.String({ description: 'e.g. "Chrome 156 on Linux"; parsed from the user agent' }),
    browser: Type.Union([Type.String(), Type.Null()]),
    os: Type.Union([Type.String(), Type.Null()]),
    type: Type.String({ description: 'desktop, mobile, tablet, … or unknown without a user agent' }),
  },
  { description: 'The device a session started on, parsed from its user agent' },
);

export const HistoryEntrySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  occurredAt: Type.String({ format: 'date-time' }),
  method: Type.String({
    description:
      'how the sign-in proved who it was: password, provider, passkey, code (a one-time code by email or SMS: ' +
      'a code sign-in or a sign-up by code), second_factor, recovery_code, ...',
  }),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('refused')]),
  ipAddress: Type.Union([Type.String(), Type.Null()]),
  userAgent: Type.Union([Type.String(), Type.Null()]),
  device: DeviceSchema,
  noticeSentAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When a new-sign-in notice about this sign-in was delivered; null when none was sent',
  }),
});

export const HistoryPageSchema = Page(HistoryEntrySchema);

export const LiveSessionSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  createdAt: Type.String({ format: 'date-time' }),
  lastActiveAt: Type.String({ format: 'date-time', description: 'the last renewal, else the sign-in' }),
  sessionExpiresAt: Type.String({ format: 'date-time' }),
  method: Type.String({ description: 'how the session was opened: password, provider, passkey, code, ...' }),
  device: DeviceSchema,
  ipAddress: Type.Union([Type.String(), Type.Null()], {
    description: 'the address the session started from',
  }),
  current: Type.Boolean({ description: "true on the caller's own session" }),
});

export const LiveSessionPageSchema = Page(LiveSessionSchema);
