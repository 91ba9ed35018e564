import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { principalOf, requireElevation, requireSession } from '../../platform/http/auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { Data, responses } from '../../platform/http/schemas.js';
import { RecoveryCodeBatchSchema, RecoveryCodeStatusSchema } from './schemas.js';
import { RecoveryCodeService } from './service.js';

export async function recoveryCodeRoutes(root: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const service = new RecoveryCodeService(ctx);
  const session = requireSession(ctx.auth);
  const elevation = requireElevation(ctx.auth);

  app.get(
    '/recovery-codes',
    {
      preHandler: session,
      schema: {
        tags: ['recovery-codes'],
        summary: 'How many recovery codes remain (never a code or a hash)',
        security: [{ bearer: [] }],
        response: responses({ 200: Data(RecoveryCodeStatusSchema) }, ['identity.session_required']),
      },
    },
    async (request) => envelope(await service.status(principalOf(request).identityId)),
  );

  app.post(
    '/recovery-codes',
    {
      // Session first (401), then the elevation (403): interface 5.3.
      preHandler: [session, elevation],
      schema: {
        tags: ['recovery-codes'],
        summary: 'Issue a new batch of ten recovery codes, revoking every live one (shown once)',
        security: [{ bearer: [], elevation: [] }],
        response: responses({ 201: Data(RecoveryCodeBatchSchema) }, [
          'identity.session_required',
          'identity.elevation_required',
        ]),
      },
    },
    async (request, reply) =>
      reply.code(201).send(envelope(await service.issue(principalOf(request).identityId))),
  );
}
