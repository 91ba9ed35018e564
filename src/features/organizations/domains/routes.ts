import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { guards, principalOf } from '../../../platform/http/auth.js';
import { envelope } from '../../../platform/http/envelope.js';
import { listRoute } from '../../../platform/http/list-route.js';
import type { RouteApp } from '../../../platform/http/routes.js';
import { Data, IdInput, Instant, NoContent, responses, Uuid } from '../../../platform/http/schemas.js';
import { Page } from '../../../platform/pagination/page.js';
import { OrganizationParams, PERMISSION_REFUSALS } from '../schemas.js';
import { DomainService } from './service.js';

const TAGS = ['organizations'];

/** POST /organizations/{organizationId}/domains. Strict; the shape is checked by the service (422). */
export const DomainBody = Type.Object(
  { domain: Type.String({ minLength: 1, maxLength: 300, description: 'e.g. example.com (IDN accepted)' }) },
  { additionalProperties: false },
);

export const DomainParams = Type.Object(
  { organizationId: IdInput, domainId: IdInput },
  { additionalProperties: false },
);

export const DomainSchema = Type.Object(
  {
    id: Uuid,
    organizationId: Uuid,
    domain: Type.String({ description: 'lower case, internationalised names in punycode (xn--)' }),
    txtRecord: Type.Object(
      {
        name: Type.String({ description: '_identity-service-verification.<domain>' }),
        value: Type.String({ description: 'identity-service-verification=<token>' }),
      },
      { description: 'the DNS TXT record that proves the domain: publish it, then ask for a verification' },
    ),
    createdAt: Instant,
    verifiedAt: Type.Union([Instant, Type.Null()]),
    verifiedBy: Type.Union([Type.Literal('dns'), Type.Literal('operator'), Type.Null()]),
    lastCheckedAt: Type.Union([Instant, Type.Null()]),
  },
  { additionalProperties: false },
);
export const DomainPageSchema = Page(DomainSchema);

/**
 * Verified domains (docs/organizations.md, "Domains"), declared inside the organizations plugin
 * (routes.ts). Every route needs `domains:manage` (owner and admin).
 */
export function domainRoutes(app: RouteApp, ctx: AppContext): void {
  const { session, security } = guards(ctx.auth);
  const service = new DomainService(ctx);

  app.post(
    '/organizations/:organizationId/domains',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Claim a domain: the TXT record to publish for its verification (domains:manage; audited)',
        description:
          'The domain is stored lower case, an internationalised name in punycode. A single label, an IP ' +
          'address or a malformed name answers 422 organization.domain_invalid; a domain the organization ' +
          'already claims, 409 organization.domain_exists. Several organizations may claim one domain; only ' +
          'one can verify it.',
        security: security.session,
        params: OrganizationParams,
        body: DomainBody,
        response: responses(
          { 201: Data(DomainSchema) },
          [...PERMISSION_REFUSALS, 'organization.domain_invalid', 'organization.domain_exists'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const domain = await service.add(
        principalOf(request).identityId,
        request.params.organizationId,
        request.body.domain,
      );
      return reply.code(201).send(envelope(domain));
    },
  );

  listRoute(app, '/organizations/:organizationId/domains', {
    tags: TAGS,
    summary: 'The organization’s domains, verified or not, newest first (domains:manage)',
    guard: session,
    security: security.session,
    page: DomainPageSchema,
    params: OrganizationParams,
    refusals: ['organization.not_found', 'organization.permission_denied'],
    revalidates: true,
    list: (scope, query, request) =>
      service.list(
        scope,
        query,
        principalOf(request).identityId,
        (request.params as { organizationId: string }).organizationId,
      ),
  });

  app.post(
    '/organizations/:organizationId/domains/:domainId/verifications',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Verify a claimed domain by its DNS TXT record (domains:manage; audited)',
        description:
          'Looks up the TXT record at txtRecord.name through DNS_RESOLVERS (DNS_TIMEOUT_MS per server) and ' +
          'compares each value with txtRecord.value. Found: the domain is verified (verifiedBy `dns`); ' +
          'already verified: answered as it is. Not found: 422 organization.domain_unverified with the ' +
          'expected txtRecord, the domain unchanged but for lastCheckedAt. No answer from the DNS: 503 ' +
          'organization.domain_check_unavailable, nothing changed. Verified by another organization: 409 ' +
          'organization.domain_taken (of two verifications at once, one wins). While the organization ' +
          'requires SSO, every session of the identities holding a verified address in the domain ends ' +
          '(reason sso_required), the caller’s included when it holds one.',
        security: security.session,
        params: DomainParams,
        response: responses({ 200: Data(DomainSchema) }, [
          ...PERMISSION_REFUSALS,
          'organization.domain_not_found',
          'organization.domain_unverified',
          'organization.domain_taken',
          'organization.domain_check_unavailable',
        ]),
      },
    },
    async (request) =>
      envelope(
        await service.verify(
          principalOf(request).identityId,
          request.params.organizationId,
          request.params.domainId,
        ),
      ),
  );

  app.delete(
    '/organizations/:organizationId/domains/:domainId',
    {
      preHandler: session,
      schema: {
        tags: TAGS,
        summary: 'Remove a domain, verified or not (domains:manage; audited)',
        description: 'Once removed, another organization may verify the domain.',
        security: security.session,
        params: DomainParams,
        response: responses({ 204: NoContent }, [...PERMISSION_REFUSALS, 'organization.domain_not_found']),
      },
    },
    async (request, reply) => {
      await service.remove(
        principalOf(request).identityId,
        request.params.organizationId,
        request.params.domainId,
      );
      return reply.code(204).send();
    },
  );
}
