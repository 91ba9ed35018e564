import { type Static, Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../../../platform/http/schemas.js';
import { Page } from '../../../../platform/pagination/page.js';
import { EVENT_TYPES } from '../../catalogue.js';

const Url = Type.String({
  minLength: 8,
  maxLength: 2048,
  pattern: '^https?://[^\\s]+$',
  description: 'Where events are POSTed: https (http only with WEBHOOK_PRIVATE_ADDRESSES=allow)',
});
const EventTypeName = Type.Union(EVENT_TYPES.map((t) => Type.Literal(t)));
const EventTypes = Type.Array(EventTypeName, {
  maxItems: EVENT_TYPES.length,
  uniqueItems: true,
  description: 'The types sent to this endpoint; empty: every type',
});
const Description = Type.String({ maxLength: 500 });

/** POST /admin/v1/webhook-endpoints. Strict. */
export const CreateEndpointBody = Type.Object(
  {
    url: Url,
    description: Type.Optional(Description),
    eventTypes: Type.Optional(EventTypes),
    organizationId: Type.Optional(Type.Union([IdInput, Type.Null()])),
    ed25519: Type.Optional(
      Type.Boolean({ description: 'Also sign with a new Ed25519 key (`v1a`); its public key is readable' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateEndpointBody = Static<typeof CreateEndpointBody>;

/** PATCH /admin/v1/webhook-endpoints/{id}. Strict; at least one member. */
export const UpdateEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    eventTypes: Type.Optional(EventTypes),
    organizationId: Type.Optional(Type.Union([IdInput, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateEndpointBody = Static<typeof UpdateEndpointBody>;

/** POST /admin/v1/webhook-endpoints/{id}/secret-rotations. Strict. */
export const RotateSecretBody = Type.Object(
  {
    overlapSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604800,
        default: 86400,
        description: 'How long the previous secret still signs beside the new one (default a day)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RotateSecretBody = Static<typeof RotateSecretBody>;

/** POST /admin/v1/webhook-endpoints/{id}/recoveries. Strict. */
export const RecoveryBody = Type.Object(
  { since: Type.String({ format: 'date-time', description: 'Events from this instant on' }) },
  { additionalProperties: false },
);
export type RecoveryBody = Static<typeof RecoveryBody>;

export const Recovery = Type.Object(
  { queued: Type.Integer({ minimum: 0, description: 'Deliveries due again or new' }) },
  { additionalProperties: false },
);

export const DeliveryParams = Type.Object(
  { id: IdInput, deliveryId: IdInput },
  { additionalProperties: false },
);

export const EndpointIdParams = Type.Object({ id: IdInput }, { additionalProperties: false });

export const Endpoint = Type.Object(
  {
    id: Uuid,
    url: Type.String(),
    description: Type.String(),
    eventTypes: Type.Array(Type.String()),
    organizationId: Type.Union([Uuid, Type.Null()]),
    ed25519PublicKey: Type.Union([
      Type.String({ description: '`whpk_` and the raw key in base64' }),
      Type.Null(),
    ]),
    previousSecretUntil: Type.Union([Instant, Type.Null()]),
    disabledAt: Type.Union([Instant, Type.Null()]),
    disabledReason: Type.Union([
      Type.String({
        description: '`operator`, `gone` (a 410 answer) or `failing` (no success for 5 days)',
      }),
      Type.Null(),
    ]),
    failingSince: Type.Union([Instant, Type.Null()], {
      description:
        'The first failed attempt since the last success (null while it succeeds); 5 days of it disable the endpoint',
    }),
    createdAt: Instant,
    updatedAt: Instant,
  },
  { additionalProperties: false },
);
export const EndpointPage = Page(Endpoint);

/** The endpoint with its signing secret: answered once, by the creation and by each rotation. */
export const EndpointWithSecret = Type.Object(
  { ...Endpoint.properties, secret: Type.String({ description: '`whsec_…`: shown only now' }) },
  { additionalProperties: false },
);

export const Delivery = Type.Object(
  {
    id: Uuid,
    eventId: Uuid,
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('dead')]),
    attempts: Type.Integer({ minimum: 0 }),
    dueAt: Instant,
    lastAttemptAt: Type.Union([Instant, Type.Null()]),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    lastLatencyMs: Type.Union([Type.Integer(), Type.Null()]),
    createdAt: Instant,
  },
  { additionalProperties: false },
);
export const DeliveryPage = Page(Delivery);
