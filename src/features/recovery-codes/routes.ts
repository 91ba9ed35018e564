import type { AppContext } from '../../context.js';
import { ELEVATION_REFUSALS, guards, principalOf } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, responses } from '../../platform/http/schemas.js';
import * as schema from './schemas.js';
import { RecoveryCodeService } from './service.js';

export const recoveryCodeRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new RecoveryCodeService(ctx);
  const { session, elevated, security } = guards(ctx.auth);

  app.get(
    '/recovery-codes',
    {
      preHandler: session,
      schema: {
        tags: ['recovery-codes'],
        summary: 'How many recovery codes remain (never a code or a hash)',
        security: security.session,
        response: responses({ 200: Data(schema.RecoveryCodeStatusSchema) }, ['identity.session_required']),
      },
    },
    async (request) => envelope(await service.status(principalOf(request).identityId)),
  );

  app.post(
    '/recovery-codes',
    {
      preHandler: elevated,
      schema: {
        tags: ['recovery-codes'],
        summary: 'Issue a new batch of ten recovery codes, revoking every live one (shown once)',
        security: security.elevated,
        response: responses({ 201: Data(schema.RecoveryCodeBatchSchema) }, [...ELEVATION_REFUSALS]),
      },
    },
    async (request, reply) =>
      reply.code(201).send(envelope(await service.issue(principalOf(request).identityId))),
  );
});
