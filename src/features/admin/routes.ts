import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { operatorOf } from '../../platform/http/admin-auth.js';
import { envelope, page } from '../../platform/http/envelope.js';
import { routePatternOf } from '../../platform/http/route-pattern.js';
import { featureRoutes } from '../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../platform/http/schemas.js';
import type { ProblemCode } from '../../platform/problem.js';
import { ConnectedApps } from '../oidc/clients.js';
import { ConnectedAppPage, ConnectedAppSchema } from '../oidc/schemas.js';
import * as schema from './schemas.js';
import { AdminService } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];
const PAGE_REFUSALS: ProblemCode[] = [
  'admin.unauthorized',
  'collection.cursor_tampered',
  'collection.cursor_invalid',
  'collection.cursor_expired',
];
const WRITE_REFUSALS: ProblemCode[] = [
  'admin.unauthorized',
  'admin.identity_not_found',
  'admin.identity_erased',
];

/** A cursor of an admin list is bound to its route and to the key that asked for it. */
function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: operatorOf(request) };
}

/**
 * The operators' routes, served only on the admin listener (ADMIN_PORT) under /admin/v1. The
 * listener checks the operator key for every request before routing's answer or validation
 * (admin-app.ts), so a stranger learns neither which routes exist nor what they accept.
 */
export const adminRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new AdminService(ctx);
  const apps = new ConnectedApps({ cursors: ctx.cursors, oidc: ctx.oidc });
  app.addSchema(ConnectedAppSchema);

  app.get(
    '/identities',
    {
      schema: {
        tags: TAGS,
        summary: 'Search identities: an exact identifier, a prefix of one, or all; newest first (paged)',
        security: SECURITY,
        querystring: schema.SearchQuery,
        response: responses({ 200: schema.IdentityPage }, [...PAGE_REFUSALS, 'identity.identifier_unusable']),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.search(
        adminScope(request),
        request.query,
        operatorOf(request),
      );
      return page(items, pageInfo);
    },
  );

  app.get(
    '/identities/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'One identity: identifiers (unmasked), methods, second factors, lock, sessions',
        security: SECURITY,
        params: schema.IdentityParams,
        response: responses({ 200: Data(schema.IdentityDetail) }, [
          'admin.unauthorized',
          'admin.identity_not_found',
        ]),
      },
    },
    async (request) => envelope(await service.read(request.params.id, operatorOf(request))),
  );

  app.get(
    '/identities/:id/sessions',
    {
      schema: {
        tags: TAGS,
        summary:
          "The identity's live sessions: device, address, last activity; newest first (paged; audited)",
        security: SECURITY,
        params: schema.IdentityParams,
        querystring: schema.SessionsQuery,
        response: responses({ 200: schema.AdminSessionPage }, [...PAGE_REFUSALS, 'admin.identity_not_found']),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.sessions(
        adminScope(request),
        request.params.id,
        request.query,
        operatorOf(request),
      );
      return page(items, pageInfo);
    },
  );

  app.get(
    '/identities/:id/organizations',
    {
      schema: {
        tags: TAGS,
        summary:
          "The identity's organizations (not disabled) and its role in each; newest first (paged; audited)",
        security: SECURITY,
        params: schema.IdentityParams,
        querystring: schema.SessionsQuery,
        response: responses({ 200: schema.AdminMembershipPage }, [
          ...PAGE_REFUSALS,
          'admin.identity_not_found',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.organizations(
        adminScope(request),
        request.params.id,
        request.query,
        operatorOf(request),
      );
      return page(items, pageInfo);
    },
  );

  app.get(
    '/identities/:id/connected-apps',
    {
      schema: {
        tags: TAGS,
        summary:
          "The apps holding access to the identity's account: a remembered consent or a live grant; newest first (paged; audited)",
        description: 'The list the person sees (GET /api/v1/connected-apps). Never a token or a secret.',
        security: SECURITY,
        params: schema.IdentityParams,
        querystring: schema.SessionsQuery,
        response: responses({ 200: ConnectedAppPage }, [...PAGE_REFUSALS, 'admin.identity_not_found']),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.personList(
        request.params.id,
        operatorOf(request),
        'connected-apps',
        (id) => apps.page(adminScope(request), request.query, id),
      );
      return page(items, pageInfo);
    },
  );

  const writes: Array<[string, string, (id: string, actor: string) => Promise<void>]> = [
    [
      'disablements',
      'Disable: every sign-in refused, every session ended at its next request (idempotent; audited)',
      (id, actor) => service.disable(id, actor),
    ],
    [
      'enablements',
      'Enable a disabled identity again (idempotent; an erased one stays disabled: 409; audited)',
      (id, actor) => service.enable(id, actor),
    ],
    [
      'lock-clearances',
      'Clear the account lock: failure count and lock end (audited)',
      (id, actor) => service.clearLock(id, actor),
    ],
    [
      'session-revocations',
      'End every session of the identity, including sign-ins still committing (audited)',
      (id, actor) => service.endSessions(id, actor),
    ],
  ];
  for (const [path, summary, act] of writes) {
    app.post(
      `/identities/:id/${path}`,
      {
        schema: {
          tags: TAGS,
          summary,
          security: SECURITY,
          params: schema.IdentityParams,
          response: responses({ 204: NoContent }, WRITE_REFUSALS),
        },
      },
      async (request, reply) => {
        await act(request.params.id, operatorOf(request));
        return reply.code(204).send();
      },
    );
  }

  app.post(
    '/identities/:id/erasures',
    {
      // A key's erasure sends no body (docs/admin.md, "Erase").
      config: { optionalBody: true },
      schema: {
        tags: TAGS,
        summary:
          'Erase: identifiers, credentials, factors, passkeys, links and addresses deleted; bare id kept (audited)',
        description:
          "With an operator's console token: only within ELEVATION_TTL of the operator's sign-in with a second factor (else 403 admin.step_up_required), and with `identifier`, one of the person's verified identifiers typed again (`DELETE` when it has none; else 422 admin.erasure_not_confirmed). With a key, no body is needed.",
        security: SECURITY,
        params: schema.IdentityParams,
        body: schema.ErasureBody,
        response: responses(
          { 204: NoContent },
          [
            ...WRITE_REFUSALS,
            'organization.last_owner_erasure',
            'admin.step_up_required',
            'admin.erasure_not_confirmed',
          ],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const operator = request.operatorIdentity;
      if (operator) {
        await service.eraseAsOperator(request.params.id, operatorOf(request), {
          signedInAt: operator.signedInAt,
          typed: request.body.identifier,
        });
      } else {
        await service.erase(request.params.id, operatorOf(request));
      }
      return reply.code(204).send();
    },
  );

  app.get(
    '/audit-records',
    {
      schema: {
        tags: TAGS,
        summary: 'The audit trail, newest first, each record with its verified flag (paged)',
        description: 'identityId: only records naming that identity as actor or target.',
        security: SECURITY,
        querystring: schema.AuditQuery,
        response: responses({ 200: schema.AuditPage }, PAGE_REFUSALS),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.auditPage(
        adminScope(request),
        request.query,
        operatorOf(request),
      );
      return page(items, pageInfo);
    },
  );

  app.get(
    '/audit-records/stream',
    {
      schema: {
        tags: TAGS,
        summary: 'The audit trail as NDJSON, oldest first, one record (with its verified flag) per line',
        security: SECURITY,
        querystring: schema.AuditStreamQuery,
        response: responses(
          {
            200: {
              description:
                'One JSON record per line, each shaped like an item of GET /admin/v1/audit-records',
              content: { 'application/x-ndjson': { schema: { type: 'string' } } },
            },
          },
          ['admin.unauthorized'],
        ),
      },
    },
    async (request, reply) => {
      const stream = await service.auditStream(
        request.query.identityId ?? null,
        request.query.afterSeq ?? 0,
        operatorOf(request),
      );
      return reply.code(200).type('application/x-ndjson').send(stream);
    },
  );
});
