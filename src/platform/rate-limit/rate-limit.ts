import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { RateLimitSetting } from '../../config.js';
import type { Signals } from '../metrics/signals.js';
import { Problem } from '../problem.js';
import { addressBucket } from './address.js';

/**
 * Registers the limiter without a global limit: only routes that name one of the three named limits
 * (SENDS_A_MESSAGE, ANSWERS_A_CHALLENGE, PROVES_A_PASSWORD: docs/configuration.md) are counted.
 * With a Redis client the counts are shared by every instance.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  redis: Redis | undefined,
  nameSpace: string,
  signals: Signals,
) {
  await app.register(rateLimit, {
    global: false,
    redis,
    nameSpace,
    // A Redis outage must not take sign-in down with it; the limiter fails open (decisions.md).
    skipOnError: true,
    addHeadersOnExceeding: {
      'x-ratelimit-limit': false,
      'x-ratelimit-remaining': false,
      'x-ratelimit-reset': false,
    },
    addHeaders: {
      'x-ratelimit-limit': false,
      'x-ratelimit-remaining': false,
      'x-ratelimit-reset': false,
      'retry-after': true,
    },
    errorResponseBuilder: (req, ctx) => {
      signals.refused(`route:${req.routeOptions.url}`);
      return new Problem('rate_limit.exceeded', {
        headers: { 'retry-after': String(Math.max(1, Math.ceil(ctx.ttl / 1000))) },
      });
    },
  });
}

/** Route config for one named limit: counted per client address (an IPv6 /64 as one) and per route. */
export function limitFor(setting: RateLimitSetting, route: string) {
  return {
    rateLimit: {
      max: setting.max,
      timeWindow: setting.windowSeconds * 1000,
      keyGenerator: (req: FastifyRequest) => `${route}|${addressBucket(req.ip)}`,
    },
  };
}
