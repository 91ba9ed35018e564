import { type Static, Type } from '@sinclair/typebox';
import { IdInput, Instant, Uuid } from '../../../platform/http/schemas.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../../platform/pagination/page.js';

/** GET /admin/v1/events. Strict. */
export const EventsQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]{0,15})$',
        description:
          'The cursor: the `seq` of the last event read (durable: it never expires); none: from the start',
      }),
    ),
    types: Type.Optional(
      Type.String({
        maxLength: 2000,
        pattern: '^[a-z_.]+(,[a-z_.]+)*$',
        description: 'Comma-separated event types; none: every type',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT })),
  },
  { additionalProperties: false },
);
export type EventsQuery = Static<typeof EventsQuery>;

/** GET /admin/v1/events/stream. Strict. */
export const EventsStreamQuery = Type.Object(
  {
    after: EventsQuery.properties.after,
    types: EventsQuery.properties.types,
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10000,
        default: 1000,
        description: 'The most lines (events) the stream carries',
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventsStreamQuery = Static<typeof EventsStreamQuery>;

export const EventIdParams = Type.Object({ id: IdInput }, { additionalProperties: false });

export const EventItem = Type.Object(
  {
    id: Uuid,
    seq: Type.Integer({ minimum: 1 }),
    type: Type.String(),
    occurredAt: Instant,
    actor: Type.Union([Type.String(), Type.Null()]),
    identityId: Type.Union([Uuid, Type.Null()]),
    sessionId: Type.Union([Uuid, Type.Null()]),
    organizationId: Type.Union([Uuid, Type.Null()]),
    data: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);

export const EventsPage = Type.Object(
  {
    data: Type.Array(EventItem),
    meta: Type.Object({
      pageInfo: Type.Object(
        {
          hasNextPage: Type.Boolean(),
          nextCursor: Type.Union([Type.String(), Type.Null()], {
            description: 'Where to go on from, now or later: the last seq read (the `after` asked when none)',
          }),
        },
        { additionalProperties: false },
      ),
    }),
  },
  { additionalProperties: false },
);
