import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { Signals } from '../metrics/signals.js';
import { Problem } from '../problem.js';
import { addressBucket } from './address.js';
import { type MessageSubject, senderSubject } from './guess-budget.js';
import type { RateLimitSetting } from './setting.js';

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

/**
 * Route config for a route that sends a message (POST /sign-ups, /password-recoveries and
 * /sign-in-methods). The sends themselves count against RATE_LIMIT_SENDS_A_MESSAGE per client address
 * and route in the database, in the transaction that decides to send (guess-budget.ts
 * `senderSubject`), so typos, unusable addresses and 409s never spend them. Every request, sending
 * or not, is also counted here against RATE_LIMIT_ANSWERS_A_CHALLENGE (10/60 by default), or
 * against RATE_LIMIT_SENDS_A_MESSAGE when an operator set that one to allow more per second (so
 * raising the send limit is never capped by this one): a person's mistakes never reach it, but it
 * bounds how fast one address can ask whether addresses are taken (409), and it refuses a flood in
 * onRequest before the body is read or the database touched.
 */
export function sendingRouteLimit(
  limits: { answersAChallenge: RateLimitSetting; sendsAMessage: RateLimitSetting },
  route: string,
) {
  const { answersAChallenge: answers, sendsAMessage: sends } = limits;
  const wider = sends.max / sends.windowSeconds > answers.max / answers.windowSeconds ? sends : answers;
  return limitFor(wider, route);
}

/** The client address's send subject for the request's route (guess-budget.ts `senderSubject`). */
export function senderOf(request: FastifyRequest): MessageSubject {
  return senderSubject(request.routeOptions.url ?? request.url, request.ip);
}
