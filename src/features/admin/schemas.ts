import { type Static, Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../platform/http/schemas.js';
import { Page, PageQuerySchema } from '../../platform/pagination/page.js';
import { PictureField, ProfileFields } from '../identities/profile.js';
import { LocaleSchema } from '../identities/schemas.js';
import { DeviceSchema } from '../sessions/schemas.js';
import { MethodKind } from '../sign-in-methods/schemas.js';

const page = PageQuerySchema.properties;

/**
 * GET /admin/v1/identities: an exact identifier (normalised as a sign-up normalises it), or a
 * prefix of the normalised value, or neither (every identity); newest first.
 */
export const SearchQuery = Type.Object(
  {
    identifierType: Type.Optional(Type.Union([Type.Literal('email'), Type.Literal('phone')])),
    identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
    prefix: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        description: 'A prefix of the normalised identifier (lower-cased email, E.164 phone)',
      }),
    ),
    externalId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: "The source system's id an imported identity keeps (docs/import.md): exact",
      }),
    ),
    limit: page.limit,
    after: page.after,
    cursorTtl: page.cursorTtl,
  },
  { additionalProperties: false },
);
export type SearchQuery = Static<typeof SearchQuery>;

export const IdentityParams = Type.Object({ id: IdInput }, { additionalProperties: false });

/** POST …/erasures from the console: the person's identifier typed again. */
export const ErasureBody = Type.Object(
  {
    identifier: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        description:
          "One of the person's verified identifiers, or `DELETE` when it has none: required with an operator's console token",
      }),
    ),
  },
  { additionalProperties: false },
);

const Identifier = Type.Object(
  {
    id: Uuid,
    type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
    value: Type.String({ description: 'Unmasked' }),
    verifiedAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);

export const IdentityItem = Type.Object(
  {
    id: Uuid,
    createdAt: Instant,
    locale: LocaleSchema,
    ...ProfileFields,
    identifiers: Type.Array(Identifier),
    disabledAt: Type.Union([Instant, Type.Null()]),
    erasedAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);

export const IdentityPage = Page(IdentityItem);

export const IdentityDetail = Type.Object(
  {
    id: Uuid,
    createdAt: Instant,
    locale: LocaleSchema,
    ...ProfileFields,
    picture: PictureField,
    disabledAt: Type.Union([Instant, Type.Null()]),
    erasedAt: Type.Union([Instant, Type.Null()]),
    identifiers: Type.Array(Identifier),
    methods: Type.Array(
      Type.Object(
        {
          id: Uuid,
          kind: MethodKind,
          display: Type.Union([Type.String(), Type.Null()], {
            description: 'Address (unmasked), provider name or passkey label; null for the password',
          }),
          verifiedAt: Instant,
          lastUsedAt: Type.Union([Instant, Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
    secondFactors: Type.Array(
      Type.Object(
        {
          id: Uuid,
          label: Type.Union([Type.String(), Type.Null()]),
          verifiedAt: Instant,
          lastUsedAt: Type.Union([Instant, Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
    hasPassword: Type.Boolean({
      description: 'Whether the identity has a password (an account may have none)',
    }),
    codeSignIn: Type.Object(
      {
        channels: Type.Array(Type.Union([Type.Literal('email'), Type.Literal('sms')]), {
          description:
            'The channels on which the identity can sign in by code now (SIGN_IN_CODES, SIGN_IN_CODES_WITH_PASSWORD, ' +
            'its verified addresses); empty when it cannot',
        }),
      },
      { additionalProperties: false },
    ),
    recoveryCodesRemaining: Type.Integer({ minimum: 0 }),
    lock: Type.Object(
      {
        failedAttempts: Type.Integer({ minimum: 0 }),
        lockedUntil: Type.Union([Instant, Type.Null()]),
        locked: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
    liveSessionCount: Type.Integer({ minimum: 0 }),
    lastSignInAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);

export const AuditQuery = Type.Object(
  {
    identityId: Type.Optional(IdInput),
    limit: page.limit,
    after: page.after,
    cursorTtl: page.cursorTtl,
  },
  { additionalProperties: false },
);
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditStreamQuery = Type.Object(
  {
    identityId: Type.Optional(IdInput),
    afterSeq: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Records after this seq (0: from the start)' }),
    ),
  },
  { additionalProperties: false },
);

export const AuditItem = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    id: Uuid,
    occurredAt: Instant,
    name: Type.String(),
    actor: Type.Union([Type.String(), Type.Null()]),
    target: Type.Union([Type.String(), Type.Null()]),
    outcome: Type.String(),
    details: Type.Record(Type.String(), Type.Unknown()),
    verified: Type.Boolean({
      description: "The record's seal is the HMAC of the previous record's seal and this record",
    }),
  },
  { additionalProperties: false },
);

export const AuditPage = Page(AuditItem);

/** GET /admin/v1/identities/{id}/sessions: a page of the person's live sessions. */
export const SessionsQuery = Type.Object(
  { limit: page.limit, after: page.after, cursorTtl: page.cursorTtl },
  { additionalProperties: false },
);
export type SessionsQuery = Static<typeof SessionsQuery>;

/** One live session as an operator sees it: device, address and last activity. */
export const AdminSession = Type.Object({
  id: Type.String({ format: 'uuid' }),
  createdAt: Type.String({ format: 'date-time' }),
  lastActiveAt: Type.String({ format: 'date-time', description: 'the last renewal, else the sign-in' }),
  sessionExpiresAt: Type.String({ format: 'date-time' }),
  method: Type.String({ description: 'how the session was opened: password, provider, passkey, code, ...' }),
  device: DeviceSchema,
  ipAddress: Type.Union([Type.String(), Type.Null()], {
    description: 'the address the session started from',
  }),
});
export const AdminSessionPage = Page(AdminSession);

/** One organization the person belongs to, with their role in it. */
export const AdminMembership = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  slug: Type.String(),
  role: Type.String({ description: "the person's role in it: owner, admin, member or a custom role" }),
  requireSecondFactor: Type.Boolean(),
  joinedAt: Type.String({ format: 'date-time' }),
});
export const AdminMembershipPage = Page(AdminMembership);
