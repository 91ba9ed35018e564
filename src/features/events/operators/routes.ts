import type { AppContext } from '../../../context.js';
import { featureRoutes } from '../../../platform/http/routes.js';
import { Data, responses } from '../../../platform/http/schemas.js';
import * as schema from './schemas.js';
import { EventReader } from './service.js';

/** The pull API (docs/events.md, "Pulling"), on the admin listener behind the operator key. */
export const eventAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const reader = new EventReader(ctx);

  app.get(
    '/events',
    {
      schema: {
        tags: ['admin'],
        summary: 'Events in seq order after a cursor, optionally of some types (paged)',
        description:
          'The cursor is the `seq` of the last event read: it never expires, so an application can catch up after an outage. Seqs are given after commit in one order: no event appears later below a cursor already passed.',
        security: [{ adminKey: [] }],
        querystring: schema.EventsQuery,
        response: responses({ 200: schema.EventsPage }, ['admin.unauthorized']),
      },
    },
    async (request) => {
      const { items, pageInfo } = await reader.page(request.query);
      return { data: items, meta: { pageInfo } };
    },
  );

  app.get(
    '/events/stream',
    {
      schema: {
        tags: ['admin'],
        summary: 'The same events as NDJSON, in seq order after a cursor, one event per line (bounded)',
        description:
          'At most `limit` lines (1000 by default), each shaped like an item of GET /admin/v1/events. The cursor for the next call is the `seq` of the last line (the `after` asked when there is none); fewer lines than `limit`: caught up for now.',
        security: [{ adminKey: [] }],
        querystring: schema.EventsStreamQuery,
        response: responses(
          {
            200: {
              description: 'One JSON event per line, each shaped like an item of GET /admin/v1/events',
              content: { 'application/x-ndjson': { schema: { type: 'string' } } },
            },
          },
          ['admin.unauthorized'],
        ),
      },
    },
    async (request, reply) => {
      const stream = await reader.stream(request.query);
      return reply.code(200).type('application/x-ndjson').send(stream);
    },
  );

  app.get(
    '/events/:id',
    {
      schema: {
        tags: ['admin'],
        summary: 'One event, whole (where a webhook whose data was left out for its size points)',
        security: [{ adminKey: [] }],
        params: schema.EventIdParams,
        response: responses({ 200: Data(schema.EventItem) }, ['admin.unauthorized', 'admin.event_not_found']),
      },
    },
    async (request) => ({ data: await reader.one(request.params.id) }),
  );
});
