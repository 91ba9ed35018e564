import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { routePatternOf } from '../http/route-pattern.js';
import { AnswerMetrics } from './answers.js';
import type { Signals } from './signals.js';

/** Gauges read when scraped: the Argon2id gate and the database pool. */
export interface Sampled {
  argon2(): { active: number; waiting: number };
  /** Undefined on PGlite (one connection, no pool). */
  pool(): { total: number; idle: number; waiting: number } | undefined;
  /** The webhook outbox, read by one query at each scrape: pending deliveries, and how late the oldest due one is. */
  webhookQueue(): Promise<{ pending: number; oldestDueSeconds: number }>;
}

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Prometheus metrics (prom-client) on their own registry: requests by route pattern, method and
 * status with duration histograms, the Argon2id queue and its waits, the database pool, refusals
 * by rule, lock trips, synchronous hook calls, session revocations by reason, deliveries by channel and outcome, and
 * Node's process and event-loop metrics. Served by serveMetrics on a listener apart from the API.
 */
export class PrometheusMetrics implements Signals {
  readonly registry = new Registry();
  /** Answers by route pattern, method and status, and their durations (see answers.ts). */
  readonly #answers = new AnswerMetrics(SECONDS);
  readonly #refusals = new Counter({
    name: 'identity_refusals_total',
    help: 'Requests refused by a limit before their secret was checked, by rule.',
    labelNames: ['rule'],
    registers: [this.registry],
  });
  readonly #lockTrips = new Counter({
    name: 'identity_lock_trips_total',
    help: 'Times the identity-wide lock tripped.',
    registers: [this.registry],
  });
  readonly #revocations = new Counter({
    name: 'identity_session_revocations_total',
    help: 'Sessions ended, by reason (refresh_token_replayed is a replay).',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly #deliveries = new Counter({
    name: 'identity_deliveries_total',
    help: 'Out-of-band messages handed to a channel, by channel and outcome.',
    labelNames: ['channel', 'outcome'],
    registers: [this.registry],
  });
  readonly #hookCalls = new Counter({
    name: 'identity_hook_calls_total',
    help: 'Synchronous hook calls by hook and outcome (allowed, refused, timeout, failed), and claims dropped (dropped_claim).',
    labelNames: ['hook', 'outcome'],
    registers: [this.registry],
  });
  readonly #hookDuration = new Histogram({
    name: 'identity_hook_duration_seconds',
    help: 'Time a synchronous hook call took, by hook.',
    labelNames: ['hook'],
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly #webhookAttempts = new Counter({
    name: 'identity_webhook_attempts_total',
    help: 'Webhook attempts recorded, by outcome: delivered, retry (another attempt is due) or dead.',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly #webhookLatency = new Histogram({
    name: 'identity_webhook_attempt_duration_seconds',
    help: 'Time from a webhook request to its answer (attempts the receiver answered).',
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly #argon2Wait = new Histogram({
    name: 'identity_argon2_wait_seconds',
    help: 'Time an Argon2id operation waited for its turn.',
    buckets: SECONDS,
    registers: [this.registry],
  });

  constructor() {
    for (const metric of this.#answers.metrics({
      requests: [
        'identity_http_requests_total',
        'HTTP requests answered, by route pattern, method and status.',
      ],
      duration: [
        'identity_http_request_duration_seconds',
        'Time from the request to its answer, by route pattern and method.',
      ],
    })) {
      // biome-ignore lint/suspicious/noExplicitAny: prom-client types registerMetric for its own classes
      this.registry.registerMetric(metric as any);
    }
    // Process metrics (CPU, memory, handles) and the event loop's delay (nodejs_eventloop_lag_*).
    collectDefaultMetrics({ register: this.registry });
  }

  /** Gauges sampled at each scrape. */
  sample(sampled: Sampled): void {
    new Gauge({
      name: 'identity_argon2_operations',
      help: 'Argon2id operations running and waiting for their turn.',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const { active, waiting } = sampled.argon2();
        this.set({ state: 'running' }, active);
        this.set({ state: 'waiting' }, waiting);
      },
    });
    new Gauge({
      name: 'identity_db_pool_connections',
      help: 'Database pool connections, and callers waiting for one.',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const pool = sampled.pool();
        if (!pool) return;
        this.set({ state: 'total' }, pool.total);
        this.set({ state: 'idle' }, pool.idle);
        this.set({ state: 'waiting' }, pool.waiting);
      },
    });
    // One query per scrape feeds both gauges: the registry collects them at once, and the second
    // is handed the query the first started.
    type Queue = { pending: number; oldestDueSeconds: number };
    let reading: Promise<Queue> | undefined;
    const queue = (): Promise<Queue> => {
      reading ??= sampled
        .webhookQueue()
        .catch(() => ({ pending: Number.NaN, oldestDueSeconds: Number.NaN }))
        .finally(() => {
          reading = undefined;
        });
      return reading;
    };
    new Gauge({
      name: 'identity_webhook_deliveries_pending',
      help: 'Webhook deliveries pending (due now or later, those of disabled endpoints included).',
      registers: [this.registry],
      async collect() {
        this.set((await queue()).pending);
      },
    });
    new Gauge({
      name: 'identity_webhook_oldest_due_seconds',
      help: 'How long the oldest pending webhook delivery due by now has waited past its due time (0: none).',
      registers: [this.registry],
      async collect() {
        this.set((await queue()).oldestDueSeconds);
      },
    });
  }

  /** Counts every answer by route pattern (never the path a client sent), method and status. */
  observeRequests(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      this.#answers.record(
        routePatternOf(request) ?? 'unmatched',
        request.method,
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });
  }

  refused(rule: string): void {
    this.#refusals.inc({ rule });
  }
  lockTripped(): void {
    this.#lockTrips.inc();
  }
  sessionsRevoked(reason: string, count: number): void {
    if (count > 0) this.#revocations.inc({ reason }, count);
  }
  delivered(channel: string, outcome: string): void {
    this.#deliveries.inc({ channel, outcome });
  }
  hookCalled(hook: string, outcome: string, seconds?: number): void {
    this.#hookCalls.inc({ hook, outcome });
    if (seconds !== undefined) this.#hookDuration.observe({ hook }, seconds);
  }
  webhookAttempted(outcome: string, latencyMs: number | null): void {
    this.#webhookAttempts.inc({ outcome });
    if (latencyMs !== null) this.#webhookLatency.observe(latencyMs / 1000);
  }
  argon2Waited(ms: number): void {
    this.#argon2Wait.observe(ms / 1000);
  }
}

/**
 * GET /metrics on its own listener (METRICS_PORT), never beside the public API: whoever can reach
 * the API cannot read the service's internals. Anything else there is 404.
 */
export async function serveMetrics(metrics: PrometheusMetrics, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
