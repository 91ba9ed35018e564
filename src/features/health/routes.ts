import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { withTimeout } from '../../platform/timeout.js';

const Check = Type.Object({ status: Type.String(), responseTime: Type.Number() });
export const Report = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
    info: Type.Record(Type.String(), Check),
    error: Type.Record(Type.String(), Check),
    details: Type.Record(Type.String(), Check),
  },
  { description: 'Health report (not wrapped)' },
);

// A readiness probe must answer within the load balancer's timeout even when the pool hangs.
const READY_TIMEOUT_MS = 2500;

export async function healthRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
  app.get(
    '/health/live',
    {
      schema: {
        tags: ['health'],
        summary: 'Liveness: the process runs; never touches the database',
        response: { 200: Report },
      },
    },
    async () => {
      // Liveness answers from the process alone, so a database outage never restarts instances.
      const check = { status: 'up', responseTime: 0 };
      return { status: 'ok', info: { process: check }, error: {}, details: { process: check } };
    },
  );

  app.get(
    '/health/ready',
    {
      schema: {
        tags: ['health'],
        summary: 'Readiness: includes a database round trip',
        response: { 200: Report, 503: Report },
      },
    },
    async (_request, reply) => {
      const started = performance.now();
      let up = true;
      try {
        await withTimeout(ctx.database.ping(), READY_TIMEOUT_MS);
      } catch {
        up = false;
      }
      const check = {
        status: up ? 'up' : 'down',
        responseTime: Math.round((performance.now() - started) * 100) / 100,
      };
      const report = {
        status: up ? 'ok' : 'error',
        info: up ? { database: check } : {},
        error: up ? {} : { database: check },
        details: { database: check },
      };
      if (!up) reply.code(503).header('retry-after', '5');
      return report;
    },
  );
}
