import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';

/**
 * The limiter's shared store, when REDIS_URL is set: one client for the app, never queueing
 * commands while disconnected (the limiter fails open rather than wait), closed with the app.
 */
export function connectRedis(app: FastifyInstance, url: string | undefined): Redis | undefined {
  if (!url) return undefined;
  const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
  redis.on('error', (err) => app.log.warn({ errCode: (err as { code?: string }).code }, 'redis error'));
  app.addHook('onClose', async () => {
    redis.disconnect();
  });
  return redis;
}
