import type { AppContext } from '../../../context.js';
import { envelope } from '../../../platform/http/envelope.js';
import { featureRoutes } from '../../../platform/http/routes.js';
import { Data, responses } from '../../../platform/http/schemas.js';
import * as schema from './schemas.js';
import { HealthReport } from './service.js';

/** The operators' health page (docs/admin.md, "Health"), on the admin listener. */
export const healthAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const report = new HealthReport(ctx);

  app.get(
    '/health',
    {
      schema: {
        tags: ['admin'],
        summary: 'Readiness, signing-key ages and queue depths, each section ok or degraded',
        description:
          'A report for people, answered 200 whatever it finds (GET /health/ready on the public port is the probe). Not audited: it names no person.',
        security: [{ adminKey: [] }],
        response: responses({ 200: Data(schema.Health) }, ['admin.unauthorized']),
      },
    },
    async () => envelope(await report.read()),
  );
});
