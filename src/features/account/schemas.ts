import { type Static, Type } from '@sinclair/typebox';
import { Instant } from '../../platform/http/schemas.js';
import { NameInput, PictureField, ProfileFields } from '../identities/profile.js';
import { LocaleSchema } from '../identities/schemas.js';
import { DeviceSchema } from '../sessions/schemas.js';

const Uuid = Type.String({ format: 'uuid' });
const MaybeInstant = Type.Union([Instant, Type.Null()]);
const MaybeText = Type.Union([Type.String(), Type.Null()]);

/** GET /account/export: everything held about the caller; never a secret, hash or seal. */
export const AccountExportSchema = Type.Object(
  {
    exportedAt: Instant,
    identity: Type.Object({
      id: Uuid,
      createdAt: Instant,
      locale: LocaleSchema,
      ...ProfileFields,
      picture: PictureField,
      password: Type.Object({ set: Type.Boolean(), changedAt: MaybeInstant }),
      lock: Type.Object({ failedAttempts: Type.Integer(), lockedUntil: MaybeInstant }),
    }),
    identifiers: Type.Array(
      Type.Object({
        id: Uuid,
        type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
        value: Type.String({ description: 'unmasked: the owner’s own data' }),
        createdAt: Instant,
        verifiedAt: MaybeInstant,
        lastUsedAt: MaybeInstant,
      }),
    ),
    providerLinks: Type.Array(
      Type.Object({
        id: Uuid,
        provider: Type.String(),
        subject: Type.String(),
        createdAt: Instant,
        lastUsedAt: MaybeInstant,
      }),
    ),
    passkeys: Type.Array(
      Type.Object({
        id: Uuid,
        label: MaybeText,
        aaguid: Uuid,
        backedUp: Type.Boolean(),
        transports: Type.Array(Type.String()),
        createdAt: Instant,
        lastUsedAt: MaybeInstant,
      }),
    ),
    secondFactors: Type.Array(
      Type.Object({
        id: Uuid,
        label: MaybeText,
        algorithm: Type.String(),
        digits: Type.Integer(),
        period: Type.Integer(),
        createdAt: Instant,
        verifiedAt: MaybeInstant,
        lastUsedAt: MaybeInstant,
      }),
    ),
    recoveryCodes: Type.Object({ remaining: Type.Integer({ minimum: 0 }), issuedAt: MaybeInstant }),
    organizations: Type.Array(
      Type.Object({
        id: Uuid,
        name: Type.String(),
        slug: Type.String(),
        role: Type.String(),
        joinedAt: Instant,
        roleChangedAt: Instant,
      }),
      { description: 'the organizations the identity belongs to, with its role in each' },
    ),
    invitationsSent: Type.Array(
      Type.Object({
        id: Uuid,
        organizationId: Uuid,
        identifierType: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
        identifier: Type.String({ description: 'masked' }),
        role: Type.String(),
        state: Type.Union([
          Type.Literal('pending'),
          Type.Literal('accepted'),
          Type.Literal('revoked'),
          Type.Literal('expired'),
        ]),
        createdAt: Instant,
        expiresAt: Instant,
        acceptedAt: MaybeInstant,
        revokedAt: MaybeInstant,
      }),
      { description: 'the organization invitations the identity sent (never their tokens)' },
    ),
    sessions: Type.Array(
      Type.Object({
        id: Uuid,
        method: Type.String(),
        createdAt: Instant,
        lastActiveAt: Instant,
        sessionExpiresAt: Instant,
        endedAt: MaybeInstant,
        endedBecause: MaybeText,
        ipAddress: MaybeText,
        userAgent: MaybeText,
        device: DeviceSchema,
      }),
    ),
    signInHistory: Type.Array(
      Type.Object({
        id: Uuid,
        occurredAt: Instant,
        method: Type.String(),
        outcome: Type.String(),
        ipAddress: MaybeText,
        userAgent: MaybeText,
        sessionId: Type.Union([Uuid, Type.Null()]),
        noticeSentAt: MaybeInstant,
      }),
    ),
    auditRecords: Type.Array(
      Type.Object({
        seq: Type.Integer(),
        id: Uuid,
        occurredAt: Instant,
        name: Type.String(),
        actor: MaybeText,
        target: MaybeText,
        outcome: Type.String(),
        details: Type.Record(Type.String(), Type.Unknown()),
      }),
    ),
  },
  { $id: 'AccountExport' },
);

/**
 * GET /account: the caller's own account at a glance, for their own pages: identifiers unmasked
 * (the owner's own data, as in the export, which the same session can already fetch), and how the
 * account is protected. Counts and times only: never a secret, code or key.
 */
export const AccountOverviewSchema = Type.Object(
  {
    id: Uuid,
    createdAt: Instant,
    locale: LocaleSchema,
    ...ProfileFields,
    picture: PictureField,
    identifiers: Type.Array(
      Type.Object({
        id: Uuid,
        type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
        value: Type.String({ description: 'unmasked: the owner’s own data' }),
        verifiedAt: MaybeInstant,
      }),
      { description: 'oldest first; verifiedAt null while a code is pending' },
    ),
    password: Type.Object({ set: Type.Boolean(), changedAt: MaybeInstant }),
    secondFactors: Type.Object({
      active: Type.Integer({ minimum: 0, description: 'verified authenticators' }),
    }),
    passkeys: Type.Object({ count: Type.Integer({ minimum: 0 }), lastAddedAt: MaybeInstant }),
    recoveryCodes: Type.Object({ remaining: Type.Integer({ minimum: 0 }), issuedAt: MaybeInstant }),
    providerLinks: Type.Array(Type.Object({ id: Uuid, provider: Type.String(), createdAt: Instant })),
  },
  { $id: 'AccountOverview' },
);

/**
 * PATCH /account: the person's own settings (their language and name); every field optional, none
 * other allowed. A name field that is absent is left as it is; null (or an empty string) clears it.
 */
export const AccountUpdateBody = Type.Object(
  {
    locale: Type.Optional(LocaleSchema),
    givenName: Type.Optional(NameInput),
    familyName: Type.Optional(NameInput),
    displayName: Type.Optional(NameInput),
  },
  { additionalProperties: false },
);
export type AccountUpdate = Static<typeof AccountUpdateBody>;
