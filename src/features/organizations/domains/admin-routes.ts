import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { operatorOf } from '../../../platform/http/admin-auth.js';
import { envelope, page } from '../../../platform/http/envelope.js';
import { routePatternOf } from '../../../platform/http/route-pattern.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, IdInput, responses } from '../../../platform/http/schemas.js';
import { PageQuerySchema } from '../../../platform/pagination/page.js';
import { DomainPageSchema, DomainSchema } from './routes.js';
import { DomainService } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];

const Params = Type.Object({ id: IdInput }, { additionalProperties: false });
const DomainIdParams = Type.Object({ id: IdInput, domainId: IdInput }, { additionalProperties: false });

function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: operatorOf(request) };
}

/** The operators' domain routes, declared inside the operators' organization plugin. */
export function domainAdminRoutes(app: RouteApp, ctx: AppContext): void {
  const service = new DomainService(ctx);

  app.get(
    '/organizations/:id/domains',
    {
      schema: {
        tags: TAGS,
        summary: 'An organization’s domains, verified or not, newest first (paged)',
        security: SECURITY,
        params: Params,
        querystring: PageQuerySchema,
        response: responses({ 200: DomainPageSchema }, [
          'admin.unauthorized',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
          'admin.organization_not_found',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.operatorList(
        adminScope(request),
        request.query,
        request.params.id,
      );
      return page(items, pageInfo);
    },
  );

  app.post(
    '/organizations/:id/domains/:domainId/verifications',
    {
      schema: {
        tags: TAGS,
        summary: 'Verify a claimed domain without DNS (verifiedBy `operator`; audited with the operator)',
        description:
          'For a domain whose owner cannot publish a TXT record: the operator vouches for it. Already ' +
          'verified: answered as it is. Verified by another organization: 409 organization.domain_taken. ' +
          'While the organization requires SSO, every session of the identities holding a verified address ' +
          'in the domain ends (reason sso_required).',
        security: SECURITY,
        params: DomainIdParams,
        response: responses({ 200: Data(DomainSchema) }, [
          'admin.unauthorized',
          'admin.organization_not_found',
          'organization.domain_not_found',
          'organization.domain_taken',
        ]),
      },
    },
    async (request) =>
      envelope(await service.operatorVerify(operatorOf(request), request.params.id, request.params.domainId)),
  );
}
