import type { AppContext } from '../../context.js';
import { guards, principalOf } from '../../platform/http/auth.js';
import { listRoute } from '../../platform/http/list-route.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { NoContent, responses } from '../../platform/http/schemas.js';
import { ConnectedApps } from './clients.js';
import * as schema from './schemas.js';

/**
 * A person's "Connected apps" (docs/api.md, "Connected apps"): the OpenID Provider's clients that
 * hold access to the caller's account, and the revocation of one.
 */
export const connectedAppRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const apps = new ConnectedApps({ cursors: ctx.cursors, oidc: ctx.oidc });
  const { session: guard, security } = guards(ctx.auth);
  app.addSchema(schema.ConnectedAppSchema);

  listRoute(app, '/connected-apps', {
    tags: ['connected-apps'],
    summary: 'The apps holding access to the caller’s account: a remembered consent or a live grant (paged)',
    description: 'Newest first. Never a token or a secret.',
    guard,
    security: security.session,
    page: schema.ConnectedAppPage,
    revalidates: false,
    list: (scope, query, request) => apps.page(scope, query, principalOf(request).identityId),
  });

  // A POST to a revocations sub-resource, as sessions are ended (POST /sessions/{id}/revocations).
  app.post(
    '/connected-apps/:clientId/revocations',
    {
      preHandler: guard,
      schema: {
        tags: ['connected-apps'],
        summary: 'Revoke an app: its remembered consent and every live grant end (back-channel logout sent)',
        security: security.session,
        params: schema.ConnectedAppParams,
        response: responses({ 204: NoContent }, [
          'identity.session_required',
          'identity.connected_app_not_found',
        ]),
      },
    },
    async (request, reply) => {
      await apps.revoke(principalOf(request).identityId, request.params.clientId);
      return reply.code(204).send();
    },
  );
});
