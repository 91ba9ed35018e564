import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../../../context.js';
import { operatorOf } from '../../../../platform/http/admin-auth.js';
import { envelope, page } from '../../../../platform/http/envelope.js';
import { routePatternOf } from '../../../../platform/http/route-pattern.js';
import { featureRoutes } from '../../../../platform/http/routes.js';
import { Data, NoContent, responses } from '../../../../platform/http/schemas.js';
import { PageQuerySchema } from '../../../../platform/pagination/page.js';
import type { ProblemCode } from '../../../../platform/problem.js';
import * as schema from './schemas.js';
import { WebhookEndpoints } from './service.js';

const TAGS = ['admin'];
const SECURITY = [{ adminKey: [] }];
const PATH = '/webhook-endpoints';
const PAGE_REFUSALS: ProblemCode[] = [
  'admin.unauthorized',
  'collection.cursor_tampered',
  'collection.cursor_invalid',
  'collection.cursor_expired',
];
const WRITE_REFUSALS: ProblemCode[] = ['admin.unauthorized', 'admin.webhook_endpoint_not_found'];

/** A cursor of an admin list is bound to its route and to the key that asked for it. */
function adminScope(request: FastifyRequest): { route: string; subject: string } {
  return { route: `GET ${routePatternOf(request)}`, subject: operatorOf(request) };
}

/** The operators' webhook endpoints (docs/events.md, "Endpoints"), on the admin listener. */
export const webhookEndpointRoutes = featureRoutes(async (app, { ctx }: { ctx: AppContext }) => {
  const service = new WebhookEndpoints(ctx);

  app.get(
    PATH,
    {
      schema: {
        tags: TAGS,
        summary: 'Every webhook endpoint, disabled ones included, newest first (paged)',
        security: SECURITY,
        querystring: PageQuerySchema,
        response: responses({ 200: schema.EndpointPage }, PAGE_REFUSALS),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.list(adminScope(request), request.query);
      return page(items, pageInfo);
    },
  );

  app.post(
    PATH,
    {
      schema: {
        tags: TAGS,
        summary: 'Add a webhook endpoint; its signing secret is answered this once (audited)',
        security: SECURITY,
        body: schema.CreateEndpointBody,
        response: responses(
          { 201: Data(schema.EndpointWithSecret) },
          ['admin.unauthorized', 'admin.webhook_url_refused'],
          { body: true },
        ),
      },
    },
    async (request, reply) => {
      const endpoint = await service.create(request.body, operatorOf(request));
      reply.header('location', `${request.url.replace(/\/$/, '')}/${endpoint.id}`);
      return reply.code(201).send(envelope(endpoint));
    },
  );

  app.get(
    `${PATH}/:id`,
    {
      schema: {
        tags: TAGS,
        summary: 'One webhook endpoint, with its Ed25519 public key when it has one',
        security: SECURITY,
        params: schema.EndpointIdParams,
        response: responses({ 200: Data(schema.Endpoint) }, WRITE_REFUSALS),
      },
    },
    async (request) => envelope(await service.read(request.params.id)),
  );

  app.patch(
    `${PATH}/:id`,
    {
      schema: {
        tags: TAGS,
        summary: 'Change the URL, description, event types or organization filter (audited)',
        security: SECURITY,
        params: schema.EndpointIdParams,
        body: schema.UpdateEndpointBody,
        response: responses(
          { 200: Data(schema.Endpoint) },
          [...WRITE_REFUSALS, 'admin.webhook_url_refused'],
          { body: true },
        ),
      },
    },
    async (request) => envelope(await service.update(request.params.id, request.body, operatorOf(request))),
  );

  app.delete(
    `${PATH}/:id`,
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a webhook endpoint and its deliveries (audited)',
        security: SECURITY,
        params: schema.EndpointIdParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.delete(request.params.id, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    `${PATH}/:id/disablements`,
    {
      schema: {
        tags: TAGS,
        summary: 'Disable: nothing more is queued or sent to it (idempotent; audited)',
        security: SECURITY,
        params: schema.EndpointIdParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.disable(request.params.id, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.delete(
    `${PATH}/:id/disablements`,
    {
      schema: {
        tags: TAGS,
        summary:
          'Enable a disabled webhook endpoint again; its pending deliveries resume (idempotent; audited)',
        security: SECURITY,
        params: schema.EndpointIdParams,
        response: responses({ 204: NoContent }, WRITE_REFUSALS),
      },
    },
    async (request, reply) => {
      await service.enable(request.params.id, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    `${PATH}/:id/secret-rotations`,
    {
      schema: {
        tags: TAGS,
        summary:
          'A new signing secret, answered this once; the old one still signs during the overlap (audited)',
        security: SECURITY,
        params: schema.EndpointIdParams,
        body: schema.RotateSecretBody,
        response: responses({ 200: Data(schema.EndpointWithSecret) }, WRITE_REFUSALS, { body: true }),
      },
    },
    async (request) => envelope(await service.rotate(request.params.id, request.body, operatorOf(request))),
  );

  app.post(
    `${PATH}/:id/deliveries/:deliveryId/resends`,
    {
      schema: {
        tags: TAGS,
        summary: 'Send a delivery again now, with the same webhook-id, its attempts counted afresh (audited)',
        security: SECURITY,
        params: schema.DeliveryParams,
        response: responses({ 204: NoContent }, [
          ...WRITE_REFUSALS,
          'admin.webhook_delivery_not_found',
          'admin.webhook_delivery_in_flight',
        ]),
      },
    },
    async (request, reply) => {
      await service.resend(request.params.id, request.params.deliveryId, operatorOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    `${PATH}/:id/recoveries`,
    {
      schema: {
        tags: TAGS,
        summary: 'Queue again every event since an instant the endpoint did not receive (audited)',
        description:
          'A dead delivery is due again; an event the endpoint has no delivery of (it was disabled, or added later) gets one; delivered and pending ones are left alone.',
        security: SECURITY,
        params: schema.EndpointIdParams,
        body: schema.RecoveryBody,
        response: responses({ 200: Data(schema.Recovery) }, WRITE_REFUSALS, { body: true }),
      },
    },
    async (request) => envelope(await service.recover(request.params.id, request.body, operatorOf(request))),
  );

  app.get(
    `${PATH}/:id/deliveries`,
    {
      schema: {
        tags: TAGS,
        summary: "The endpoint's deliveries, newest first, with their last attempt (paged)",
        security: SECURITY,
        params: schema.EndpointIdParams,
        querystring: PageQuerySchema,
        response: responses({ 200: schema.DeliveryPage }, [
          ...PAGE_REFUSALS,
          'admin.webhook_endpoint_not_found',
        ]),
      },
    },
    async (request) => {
      const { items, pageInfo } = await service.deliveries(
        adminScope(request),
        request.query,
        request.params.id,
      );
      return page(items, pageInfo);
    },
  );
});
