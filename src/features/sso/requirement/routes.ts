import type { AppContext } from '../../../context.js';
import { guards, principalOf } from '../../../platform/http/auth.js';
import { envelope } from '../../../platform/http/envelope.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, responses } from '../../../platform/http/schemas.js';
import { OrganizationParams, PERMISSION_REFUSALS } from '../../organizations/schemas.js';
import { SsoRequirementBody, SsoRequirementSchema } from './schemas.js';
import { SsoRequirementService } from './service.js';

/**
 * PUT /organizations/{id}/sso-requirement (docs/sso.md, "Require SSO"), declared inside the
 * SSO plugin (../routes.ts). Needs `connections:manage` (owner and admin).
 */
export function ssoRequirementRoutes(app: RouteApp, ctx: AppContext): void {
  const { session, security } = guards(ctx.auth);
  const service = new SsoRequirementService(ctx);

  app.put(
    '/organizations/:organizationId/sso-requirement',
    {
      preHandler: session,
      schema: {
        tags: ['organizations'],
        summary: 'Require SSO for the verified domains, or stop requiring it (connections:manage; audited)',
        description:
          'On: every identity holding a verified email in one of the organization’s verified domains signs in ' +
          'only through the organization’s IdP, and its sessions and OpenID grants end now (the caller’s own ' +
          'too, when it is one of them). Needs a verified domain and an enabled connection, else 409 ' +
          'organization.sso_requirement_unmet. Off: every way in again; nothing ended comes back.',
        security: security.session,
        params: OrganizationParams,
        body: SsoRequirementBody,
        response: responses(
          { 200: Data(SsoRequirementSchema) },
          [...PERMISSION_REFUSALS, 'organization.sso_requirement_unmet'],
          { body: true },
        ),
      },
    },
    async (request) => {
      const view = await service.set(
        { kind: 'member', identityId: principalOf(request).identityId },
        request.params.organizationId,
        request.body.requireSso,
      );
      return envelope(view);
    },
  );
}
