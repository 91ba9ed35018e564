import type { AppContext } from '../../../context.js';
import { featureRoutes } from '../../../platform/http/routes.js';
import { responses } from '../../../platform/http/schemas.js';
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
});
