import type { Clock } from '../../../platform/clock.js';
import type { Database } from '../../../platform/db/database.js';
import { pingRedis } from '../../../platform/rate-limit/redis.js';
import { withTimeout } from '../../../platform/timeout.js';
import { deliveryDepth } from '../../events/webhooks/repository.js';
import { liveOidcKeyAges } from '../../oidc/repository.js';
import { queuedNoticeDepth } from '../../security-notices/repository.js';
import { liveSigningKeyAges } from '../../sessions/repository.js';

/** A key older than this is due for rotation (docs/decisions.md, "The console's health page"). */
export const ROTATE_AFTER_DAYS = 180;
/** The oldest waiting delivery or notice may wait this long before the queues are degraded. */
export const LAG_LIMIT_SECONDS = 300;
const CHECK_TIMEOUT_MS = 2500;
const DAY_MS = 86_400_000;

export interface HealthDeps {
  database: Database;
  clock: Clock;
  config: { redisUrl?: string };
}

type Check = { status: 'up' | 'down' | 'not_configured'; latencyMs: number | null };
type Status = 'ok' | 'degraded';

/**
 * The health page's figures (docs/admin.md, "Health"): readiness, signing-key ages and queue depths,
 * each section `ok` or `degraded`. A report, not a probe: it answers 200 whatever it finds
 * (GET /health/ready is the load balancer's probe).
 */
export class HealthReport {
  private readonly startedAt: Date;

  constructor(private readonly deps: HealthDeps) {
    this.startedAt = deps.clock.now();
  }

  async read() {
    const { database, clock, config } = this.deps;
    const now = clock.now();
    const started = performance.now();
    const dbUp = await withTimeout(database.ping(), CHECK_TIMEOUT_MS).then(
      () => true,
      () => false,
    );
    const db: Check = dbUp
      ? { status: 'up', latencyMs: Math.round((performance.now() - started) * 100) / 100 }
      : { status: 'down', latencyMs: null };
    let redis: Check = { status: 'not_configured', latencyMs: null };
    if (config.redisUrl) {
      const latency = await pingRedis(config.redisUrl, CHECK_TIMEOUT_MS);
      redis = latency === null ? { status: 'down', latencyMs: null } : { status: 'up', latencyMs: latency };
    }
    const readiness = {
      status: (db.status === 'down' || redis.status === 'down' ? 'degraded' : 'ok') as Status,
      database: db,
      redis,
    };
    // Without the database only readiness is known: the other sections are null.
    if (!dbUp) return { ...this.envelope(now, readiness), keys: null, queues: null };

    const [oidcKeys, tokenKeys, deliveries, notices] = await Promise.all([
      liveOidcKeyAges(database.db),
      liveSigningKeyAges(database.db),
      deliveryDepth(database.db, now),
      queuedNoticeDepth(database.db),
    ]);
    const key = (purpose: 'id_token' | 'access_token', k: { kid: string; alg: string; createdAt: Date }) => {
      const rotateBy = new Date(k.createdAt.getTime() + ROTATE_AFTER_DAYS * DAY_MS);
      return {
        purpose,
        kid: k.kid,
        alg: k.alg,
        createdAt: k.createdAt.toISOString(),
        ageDays: Math.max(0, Math.floor((now.getTime() - k.createdAt.getTime()) / DAY_MS)),
        rotateBy: rotateBy.toISOString(),
        rotationDue: now >= rotateBy,
      };
    };
    const signing = [
      ...oidcKeys.map((k) => key('id_token', k)),
      // The access-token keys are Ed25519 (features/sessions/access-tokens.ts).
      ...tokenKeys.map((k) => key('access_token', { ...k, alg: 'EdDSA' })),
    ];
    const lagging = (at: Date | null) =>
      at !== null && now.getTime() - at.getTime() > LAG_LIMIT_SECONDS * 1000;
    const queuesDegraded =
      lagging(deliveries.oldestDueAt) || lagging(notices.oldestAt) || deliveries.failingEndpoints > 0;
    const keys = {
      status: (signing.some((k) => k.rotationDue) ? 'degraded' : 'ok') as Status,
      rotateAfterDays: ROTATE_AFTER_DAYS,
      signing,
    };
    const queues = {
      status: (queuesDegraded ? 'degraded' : 'ok') as Status,
      lagLimitSeconds: LAG_LIMIT_SECONDS,
      webhookDeliveries: {
        ...deliveries,
        oldestDueAt: deliveries.oldestDueAt?.toISOString() ?? null,
      },
      securityNotices: { pending: notices.pending, oldestAt: notices.oldestAt?.toISOString() ?? null },
    };
    const status: Status = [readiness, keys, queues].some((s) => s.status === 'degraded') ? 'degraded' : 'ok';
    return { ...this.envelope(now, readiness), status, keys, queues };
  }

  private envelope(now: Date, readiness: { status: Status; database: Check; redis: Check }) {
    return {
      status: 'degraded' as Status,
      checkedAt: now.toISOString(),
      startedAt: this.startedAt.toISOString(),
      uptimeSeconds: Math.max(0, Math.floor((now.getTime() - this.startedAt.getTime()) / 1000)),
      readiness,
    };
  }
}
