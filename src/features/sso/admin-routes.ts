import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { operatorOf } from '../../platform/http/admin-auth.js';
import { envelope } from '../../platform/http/envelope.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, IdInput, Instant, responses } from '../../platform/http/schemas.js';
import { limitFor } from '../../platform/rate-limit/rate-limit.js';
import { ConnectionService } from '../organizations/connections/service.js';
import { TestResultSchema } from './schemas.js';
import { SsoService } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];
const Params = Type.Object({ id: IdInput }, { additionalProperties: false });
const ConnectionIdParams = Type.Object(
  { id: IdInput, connectionId: IdInput },
  { additionalProperties: false },
);

/**
 * Operators' connection tests (docs/sso.md, "By an operator"), a plugin of the admin listener: the
 * start (a single-use start URL on the public origin) and the result, for the starting operator only.
 */
export const ssoTestAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const connections = new ConnectionService(ctx);
  const sso = new SsoService(ctx);

  app.post(
    '/organizations/:id/connections/:connectionId/tests',
    {
      config: limitFor(ctx.config.rateLimits.provesAPassword, 'sso-tests'),
      schema: {
        tags: TAGS,
        summary: 'Test a connection: a single-use start URL to open in the operator’s browser (audited)',
        description:
          'Enabled or not, the connection’s flow is made now, bound to no browser. `startUrl` (on the ' +
          'public origin, single use, until `expiresAt`) binds it to the browser that opens it (the ' +
          'flow’s cookie) and sends it to the IdP; the IdP’s answer goes through every check of a ' +
          'sign-in and the browser lands on a hosted page that says the test is over. Nothing is signed ' +
          'in, created or linked. The result is read with GET /connection-tests/{id}, by this operator ' +
          'only (docs/sso.md, "Testing a connection"). An OpenID issuer whose discovery fails: 503 ' +
          'identity.sso_idp_unavailable.',
        security: SECURITY,
        params: ConnectionIdParams,
        response: responses(
          {
            201: Data(
              Type.Object(
                {
                  id: Type.String({
                    format: 'uuid',
                    description: 'the test, for GET /connection-tests/{id}',
                  }),
                  startUrl: Type.String({
                    format: 'uri',
                    description: 'open it once, in the operator’s browser: it goes to the IdP',
                  }),
                  expiresAt: Instant,
                },
                { additionalProperties: false },
              ),
            ),
          },
          [
            'admin.unauthorized',
            'admin.organization_not_found',
            'organization.connection_not_found',
            'identity.sso_idp_unavailable',
          ],
          { rateLimited: true },
        ),
      },
    },
    async (request, reply) => {
      const { id, connectionId } = request.params;
      await connections.get({ kind: 'operator', operator: operatorOf(request) }, id, connectionId);
      const started = await sso.startOperatorTest(id, connectionId, operatorOf(request));
      return reply.code(201).send(envelope(started));
    },
  );

  app.get(
    '/connection-tests/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'The result of an operator’s connection test: what the IdP sent and which checks passed',
        description:
          'The shape of POST /sso-tests/results. Only for the operator who started the test (the same ' +
          'admin key, or the same operator identity), once the IdP has answered, for ten minutes after; ' +
          'before the answer, after, or for anyone else: the identical 404 ' +
          'organization.connection_test_not_found.',
        security: SECURITY,
        params: Params,
        response: responses({ 200: Data(TestResultSchema) }, [
          'admin.unauthorized',
          'organization.connection_test_not_found',
        ]),
      },
    },
    async (request) => envelope(await sso.operatorTestResult(request.params.id, operatorOf(request))),
  );
});
