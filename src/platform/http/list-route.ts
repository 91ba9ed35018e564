import type { TSchema } from '@sinclair/typebox';
import type { FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { CursorScope } from '../pagination/cursor.js';
import { type PageInfo, type PageQuery, PageQuerySchema } from '../pagination/page.js';
import type { ProblemCode } from '../problem.js';
import { listScope } from './auth.js';
import { conditionalGet } from './conditional.js';
import { page } from './envelope.js';
import type { RouteApp } from './routes.js';
import { NoContent, responses } from './schemas.js';

export interface ListRoute {
  tags: string[];
  summary: string;
  description?: string;
  /** The guard the route stands behind, and the OpenAPI security it implies (see guards()). */
  guard: RouteShorthandOptions['preHandler'];
  security: Record<string, string[]>[];
  /** The page's schema: Page(item). */
  page: TSchema;
  /** The path's parameters, for a list under a resource (`/organizations/:organizationId/members`). */
  params?: TSchema;
  /** What the list refuses beyond the session and the cursor (e.g. a parent resource not found). */
  refusals?: ProblemCode[];
  /**
   * Sets a weak ETag and answers 304 to a matching If-None-Match. The tag covers the items and
   * whether more follow, not the freshly signed cursor (whose expiry moves on every request), so an
   * unchanged page revalidates.
   */
  revalidates: boolean;
  /** One keyset page for the caller; the cursor scope is this route and this caller. */
  list: (
    scope: CursorScope,
    query: PageQuery,
    request: FastifyRequest,
  ) => Promise<{ items: unknown[]; pageInfo: PageInfo }>;
}

/**
 * Every list route is declared here, one way: GET, behind a session, `limit`/`after`/`cursorTtl`
 * in the query, the page in the envelope; refused without a live session, or with a cursor of
 * another route or caller, unreadable or expired.
 */
export function listRoute(app: RouteApp, path: string, route: ListRoute): void {
  const success: Record<number, TSchema> = route.revalidates
    ? { 200: route.page, 304: NoContent }
    : { 200: route.page };
  app.get(
    path,
    {
      preHandler: route.guard,
      schema: {
        tags: route.tags,
        summary: route.summary,
        description: route.description,
        security: route.security,
        querystring: PageQuerySchema,
        ...(route.params ? { params: route.params } : {}),
        response: responses(success, [
          'identity.session_required',
          'collection.cursor_tampered',
          'collection.cursor_invalid',
          'collection.cursor_expired',
          ...(route.refusals ?? []),
        ]),
      },
    },
    async (request, reply) => {
      const { items, pageInfo } = await route.list(listScope(request), request.query, request);
      if (route.revalidates && conditionalGet(request, reply, { items, hasNextPage: pageInfo.hasNextPage }))
        return reply.code(304).send();
      return page(items, pageInfo);
    },
  );
}
