import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { withTimeout } from '../timeout.js';

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

/**
 * One PING to REDIS_URL on a connection of its own, closed after (the health page: the admin
 * listener holds no client of the limiter's); the round trip in milliseconds, or null when it does
 * not answer within `timeoutMs`.
 */
export async function pingRedis(url: string, timeoutMs: number): Promise<number | null> {
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  const started = performance.now();
  try {
    await withTimeout(
      redis.connect().then(() => redis.ping()),
      timeoutMs,
    );
    return Math.round((performance.now() - started) * 100) / 100;
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}
