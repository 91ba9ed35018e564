import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { operatorOf } from '../../../platform/http/admin-auth.js';
import { envelope } from '../../../platform/http/envelope.js';
import { featureRoutes } from '../../../platform/http/routes.js';
import { Data, IdInput, responses } from '../../../platform/http/schemas.js';
import { SsoRequirementBody, SsoRequirementSchema } from './schemas.js';
import { SsoRequirementService } from './service.js';

const Params = Type.Object({ id: IdInput }, { additionalProperties: false });

/** The operators' PUT …/sso-requirement (docs/sso.md, "Require SSO"), a plugin of the admin listener. */
export const ssoRequirementAdminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new SsoRequirementService(ctx);

  app.put(
    '/organizations/:id/sso-requirement',
    {
      schema: {
        tags: ['admin'],
        summary: 'Require SSO for an organization’s verified domains, or stop requiring it (audited)',
        description:
          'As PUT /api/v1/organizations/{id}/sso-requirement (docs/sso.md, "Require SSO"), for any organization, ' +
          'disabled ones included: 409 organization.sso_requirement_unmet without a verified domain and an ' +
          'enabled connection (SAML or OpenID).',
        security: [{ adminKey: [] }],
        params: Params,
        body: SsoRequirementBody,
        response: responses(
          { 200: Data(SsoRequirementSchema) },
          ['admin.unauthorized', 'admin.organization_not_found', 'organization.sso_requirement_unmet'],
          { body: true },
        ),
      },
    },
    async (request) => {
      const view = await service.set(
        { kind: 'operator', operator: operatorOf(request) },
        request.params.id,
        request.body.requireSso,
      );
      return envelope(view);
    },
  );
});
