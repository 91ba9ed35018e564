import { Type } from '@sinclair/typebox';
import { integer, section } from '../../config/schema.js';

/** Events and their webhook delivery (docs/events.md). */
export const eventsSection = section({
  variables: {
    WEBHOOK_PRIVATE_ADDRESSES: Type.Optional(
      Type.Unsafe<'allow' | 'refuse'>({
        type: 'string',
        enum: ['allow', 'refuse'],
        refusal: 'must be one of allow, refuse',
        description:
          '`refuse`: a webhook is sent only to an `https` URL whose host resolves, at delivery time, to public addresses only (no loopback, private, link-local, metadata or other special-use address); `allow`: `http` and any address too (tests, receivers inside the cluster)',
        shown: 'production: `refuse`; elsewhere: `allow`',
      }),
    ),
    EVENT_RETENTION_DAYS: integer(30, 1, 3650, {
      description:
        'days an event is kept (the pull API and the webhook deliveries of it go with it), pruned by each instance about hourly in bounded batches',
    }),
    WEBHOOK_MAX_PAYLOAD_BYTES: integer(262144, 4096, 16777216, {
      description:
        'the most bytes a webhook body may have: an event whose body would be larger is sent with `data` null and `dataOmitted` true, and the receiver reads it whole from `GET /admin/v1/events/{id}`',
    }),
    WEBHOOK_POLL_MS: integer(1000, 0, 60000, {
      description:
        'how often each instance looks for due webhook deliveries and stamps committed events with their `seq`; `0` never (no delivery from this instance: the pull API still stamps as it reads)',
    }),
  },
  map: (e, shared) => ({
    events: {
      /** Whether a webhook may go to http and to a non-public address (docs/events.md, "Safety"). */
      privateAddresses: (e.WEBHOOK_PRIVATE_ADDRESSES ?? (shared.production ? 'refuse' : 'allow')) === 'allow',
      /** The delivery worker's poll interval; 0: no worker. */
      pollMs: e.WEBHOOK_POLL_MS,
      /** A webhook body's most bytes: past it, `data` is left out (docs/events.md, "Delivery"). */
      maxPayloadBytes: e.WEBHOOK_MAX_PAYLOAD_BYTES,
      /** Seconds an event is kept. */
      retentionSeconds: e.EVENT_RETENTION_DAYS * 86400,
    },
  }),
});
