/**
 * The reference the service's floor is measured against (npm run bench): bare Fastify, the same
 * version and Node as the service, answering GET /health/live with the same JSON body through the
 * same response schema, no logger, no hooks, no plugins. Started as its own process like the
 * service; prints nothing and listens on PORT until SIGTERM.
 */
import Fastify from 'fastify';
import { Report } from '../src/features/health/routes.js';

const app = Fastify({ logger: false });
app.get('/health/live', { schema: { response: { 200: Report } } }, async () => {
  const check = { status: 'up', responseTime: 0 };
  return { status: 'ok', info: { process: check }, error: {}, details: { process: check } };
});
app.get('/health/ready', async () => ({ status: 'ok' }));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.once('SIGTERM', () => {
  app.close().then(() => process.exit(0));
});
