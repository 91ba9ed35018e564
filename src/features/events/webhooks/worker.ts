import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../../../config.js';
import type { Clock } from '../../../platform/clock.js';
import type { Sealer } from '../../../platform/crypto/seal.js';
import type { Database } from '../../../platform/db/database.js';
import type { Signals } from '../../../platform/metrics/signals.js';
import type { EventLog } from '../log.js';
import { pruneOld, stampCommitted } from '../sequencer.js';
import {
  type AttemptResult,
  type ClaimedDelivery,
  claimDue,
  clearFailing,
  disableEndpoint,
  markFailing,
  pendingStats,
  recordAttempt,
  releaseClaim,
} from './repository.js';
import { postOnce, type Resolve, type SendOutcome, systemResolve } from './send.js';
import { previousSecretAad, secretAad, signingKeyAad, v1aSignature, v1Signature } from './signing.js';
import { endpointView } from './view.js';

/**
 * The waits after each failed attempt (Standard Webhooks' schedule): the first attempt is sent at
 * once, then after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; after the eighth the
 * delivery is dead. Each wait is spread by ±10 % (jitter), so a receiver back from an outage is
 * not hit by every delivery at once.
 */
export const RETRY_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000] as const;
export const MAX_ATTEMPTS = RETRY_SECONDS.length + 1;
/** An answer's Retry-After is honoured up to this. */
const MAX_RETRY_AFTER_SECONDS = 86_400;
/** One attempt's whole time (connection, request, answer). */
export const SEND_TIMEOUT_MS = 15_000;
/** A claim outlives the longest attempt; a worker that died holding one lets it go when it ends. */
const LEASE_SECONDS = 60;
/** Deliveries claimed (and sent concurrently) per round. */
const BATCH = 16;
/** An endpoint with no success for this long since its first failure is disabled (`failing`). */
export const DISABLE_AFTER_FAILING_SECONDS = 5 * 86_400;
/** How often an instance prunes events past their retention. */
const PRUNE_EVERY_MS = 3_600_000;

export interface WebhookWorkerDeps {
  database: Database;
  clock: Clock;
  sealer: Sealer;
  log: FastifyBaseLogger;
  config: Pick<Config, 'events'>;
  /** Where the disablement of an endpoint is told (`webhook_endpoint.disabled`). */
  events: EventLog;
  signals: Signals;
}

export interface WebhookWorkerOptions {
  resolve?: Resolve;
  /** In [0, 1): the jitter's draw (tests fix it). */
  random?: () => number;
  timeoutMs?: number;
}

/** Seconds from a Retry-After (delta-seconds or an HTTP date), or null when there is none usable. */
function retryAfterSeconds(value: string | null, now: Date): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Math.min(Number(trimmed), MAX_RETRY_AFTER_SECONDS);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, Math.ceil((at - now.getTime()) / 1000)), MAX_RETRY_AFTER_SECONDS);
}

/**
 * The body every attempt of one delivery sends, byte for byte. Past `maxBytes` the event's `data`
 * is left out (null, `dataOmitted` true): the receiver reads the event whole from
 * `GET /admin/v1/events/{id}`.
 */
export function payloadOf(d: ClaimedDelivery, maxBytes: number): string {
  const envelope = {
    id: d.eventId,
    type: d.type,
    timestamp: new Date(d.occurredAt).toISOString(),
    actor: d.actor,
    identityId: d.identityId,
    sessionId: d.sessionId,
    organizationId: d.organizationId,
  };
  const whole = JSON.stringify({
    ...envelope,
    data: typeof d.data === 'string' ? JSON.parse(d.data) : d.data,
  });
  if (Buffer.byteLength(whole) <= maxBytes) return whole;
  return JSON.stringify({ ...envelope, data: null, dataOmitted: true });
}

/**
 * Delivers webhooks at least once (docs/events.md, "Delivery"). A round claims due deliveries in a
 * statement of its own (FOR UPDATE SKIP LOCKED, a lease), sends each with no transaction open, and
 * records each result in another: no transaction is ever held across a request. Any number of
 * instances may run one; a delivery is sent by one claim at a time.
 */
export class WebhookWorker {
  readonly #resolve: Resolve;
  readonly #random: () => number;
  readonly #timeoutMs: number;
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;
  #prunedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: WebhookWorkerDeps,
    opts: WebhookWorkerOptions = {},
  ) {
    this.#resolve = opts.resolve ?? systemResolve;
    this.#random = opts.random ?? Math.random;
    this.#timeoutMs = opts.timeoutMs ?? SEND_TIMEOUT_MS;
  }

  /** Polls every WEBHOOK_POLL_MS (0: never). */
  start(): void {
    const every = this.deps.config.events.pollMs;
    if (every === 0 || this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.runOnce().catch((err: unknown) => {
        this.deps.log.warn({ errClass: (err as Error)?.name }, 'webhook delivery round failed');
      });
    }, every);
    this.#timer.unref();
  }

  /**
   * Stops polling; an attempt under way is cut short and its delivery given back unsent (due as it
   * was, its attempt not counted), so nothing stays claimed by a stopped instance.
   */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stop.abort();
    await this.#running?.catch(() => 0);
  }

  /** The outbox for the metrics: pending deliveries, and how late the oldest due one is (seconds). */
  async queue(): Promise<{ pending: number; oldestDueSeconds: number }> {
    const now = this.deps.clock.now();
    const { pending, oldestDue } = await pendingStats(this.deps.database.db, now);
    const late = oldestDue === null ? 0 : (now.getTime() - oldestDue.getTime()) / 1000;
    return { pending, oldestDueSeconds: Math.max(0, late) };
  }

  /**
   * One round: stamps committed events, prunes old ones (about hourly), then claims, sends and
   * records due deliveries.
   */
  runOnce(): Promise<number> {
    if (this.#running) return this.#running;
    const run = this.#round().finally(() => {
      this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #round(): Promise<number> {
    const { db } = this.deps.database;
    await stampCommitted(db);
    const at = this.deps.clock.now().getTime();
    if (at - this.#prunedAt >= PRUNE_EVERY_MS) {
      this.#prunedAt = at;
      await pruneOld(db, new Date(at - this.deps.config.events.retentionSeconds * 1000));
    }
    let sent = 0;
    while (!this.#stop.signal.aborted) {
      const now = this.deps.clock.now();
      const leaseId = randomUUID();
      const claimed = await claimDue(db, {
        now,
        leaseId,
        leaseUntil: new Date(now.getTime() + LEASE_SECONDS * 1000),
        limit: BATCH,
      });
      if (claimed.length === 0) break;
      await Promise.all(claimed.map((d) => this.#deliver(d, leaseId)));
      sent += claimed.length;
      if (claimed.length < BATCH) break;
    }
    return sent;
  }

  /**
   * One attempt. A fault of our own before the request (a secret that no longer opens) is a failed
   * attempt like any other, so the delivery follows the schedule to its end instead of coming back
   * every round.
   */
  async #deliver(d: ClaimedDelivery, leaseId: string): Promise<void> {
    const started = this.deps.clock.now();
    const body = payloadOf(d, this.deps.config.events.maxPayloadBytes);
    const timestamp = Math.floor(started.getTime() / 1000);
    let signatures: string[];
    try {
      signatures = this.#sign(d, started, timestamp, body);
    } catch (err) {
      this.deps.log.error(
        { errClass: (err as Error)?.name, endpointId: d.endpointId },
        'webhook signing failed',
      );
      const now = this.deps.clock.now();
      const result = this.#result(d, { kind: 'failed', reason: 'internal' }, now, 0);
      if (await recordAttempt(this.deps.database.db, d.id, leaseId, result)) {
        await this.#recorded(d, result, null, now);
      }
      return;
    }
    await this.#send(d, leaseId, body, timestamp, signatures);
  }

  #sign(d: ClaimedDelivery, started: Date, timestamp: number, body: string): string[] {
    const signatures = [
      v1Signature(this.deps.sealer.open(d.sealedSecret, secretAad(d.endpointId)), d.eventId, timestamp, body),
    ];
    if (d.sealedPreviousSecret && d.previousSecretUntil && new Date(d.previousSecretUntil) > started) {
      const previous = this.deps.sealer.open(d.sealedPreviousSecret, previousSecretAad(d.endpointId));
      signatures.push(v1Signature(previous, d.eventId, timestamp, body));
    }
    if (d.sealedEd25519Key) {
      const key = this.deps.sealer.open(d.sealedEd25519Key, signingKeyAad(d.endpointId));
      signatures.push(v1aSignature(key, d.eventId, timestamp, body));
    }
    return signatures;
  }

  async #send(d: ClaimedDelivery, leaseId: string, body: string, timestamp: number, signatures: string[]) {
    const { db } = this.deps.database;
    const t0 = performance.now();
    const outcome = await postOnce(
      d.url,
      {
        'webhook-id': d.eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatures.join(' '),
      },
      body,
      {
        privateAddresses: this.deps.config.events.privateAddresses,
        resolve: this.#resolve,
        timeoutMs: this.#timeoutMs,
        signal: this.#stop.signal,
      },
    );
    const latencyMs = Math.round(performance.now() - t0);
    if (outcome.kind === 'failed' && outcome.reason === 'aborted') {
      await releaseClaim(db, d.id, leaseId);
      return;
    }
    const now = this.deps.clock.now();
    const result = this.#result(d, outcome, now, latencyMs);
    if (await recordAttempt(db, d.id, leaseId, result)) {
      await this.#recorded(d, result, outcome.kind === 'answered' ? outcome.status : null, now);
    }
  }

  /**
   * After an attempt was recorded: a success ends the endpoint's failing spell; a failure starts
   * one, and one that has lasted DISABLE_AFTER_FAILING_SECONDS disables it; a 410 disables it now.
   */
  async #recorded(d: ClaimedDelivery, result: AttemptResult, status: number | null, now: Date) {
    const { db } = this.deps.database;
    this.deps.signals.webhookAttempted(
      result.status === 'delivered' ? 'delivered' : result.status === 'dead' ? 'dead' : 'retry',
      result.latencyMs,
    );
    if (result.status === 'dead') {
      this.deps.log.warn(
        { endpointId: d.endpointId, deliveryId: d.id, attempts: d.attempts },
        'webhook delivery dead',
      );
    }
    if (result.status === 'delivered') {
      await clearFailing(db, d.endpointId);
      return;
    }
    if (status === 410) {
      await this.#disable(d.endpointId, now, 'gone');
      return;
    }
    await markFailing(db, d.endpointId, now);
    await this.#disable(d.endpointId, now, 'failing');
  }

  /**
   * Disables the endpoint (for `failing`, only once it has failed since 5 days or more) and, in
   * the same transaction, appends `webhook_endpoint.disabled`: the endpoint is disabled before the
   * event is appended, so no delivery of it is queued for the endpoint itself.
   */
  async #disable(endpointId: string, now: Date, reason: 'gone' | 'failing'): Promise<void> {
    const failingBefore =
      reason === 'failing' ? new Date(now.getTime() - DISABLE_AFTER_FAILING_SECONDS * 1000) : undefined;
    const disabled = await this.deps.database.db.transaction().execute(async (trx) => {
      const row = await disableEndpoint(trx, endpointId, now, reason, failingBefore);
      if (row) {
        await this.deps.events.append(trx, {
          type: 'webhook_endpoint.disabled',
          actor: null,
          data: endpointView(row),
        });
      }
      return row;
    });
    if (!disabled) return;
    if (reason === 'gone') {
      this.deps.log.warn({ endpointId }, 'webhook endpoint answered 410 Gone: disabled');
    } else {
      this.deps.log.warn(
        { endpointId, failingSince: disabled.failingSince && new Date(disabled.failingSince).toISOString() },
        'webhook endpoint failing for 5 days: disabled',
      );
    }
  }

  #result(d: ClaimedDelivery, outcome: SendOutcome, now: Date, latencyMs: number): AttemptResult {
    const base = { at: now, latencyMs: outcome.kind === 'answered' ? latencyMs : null };
    if (outcome.kind === 'answered' && outcome.status >= 200 && outcome.status < 300) {
      return { ...base, status: 'delivered', dueAt: now, statusCode: outcome.status, error: null };
    }
    const statusCode = outcome.kind === 'answered' ? outcome.status : null;
    const error =
      outcome.kind === 'answered'
        ? `status_${outcome.status}`
        : outcome.kind === 'refused'
          ? `${outcome.reason}_refused`
          : outcome.reason;
    if ((outcome.kind === 'answered' && outcome.status === 410) || d.attempts >= MAX_ATTEMPTS) {
      return { ...base, status: 'dead', dueAt: now, statusCode, error };
    }
    const asked = outcome.kind === 'answered' ? retryAfterSeconds(outcome.retryAfter, now) : null;
    const wait =
      asked !== null ? Math.max(asked, 1) : RETRY_SECONDS[d.attempts - 1] * (0.9 + 0.2 * this.#random());
    return {
      ...base,
      status: 'pending',
      dueAt: new Date(now.getTime() + Math.round(wait * 1000)),
      statusCode,
      error,
    };
  }
}

/** Delivers while the app runs (WEBHOOK_POLL_MS); stops, its claims finished or given back, at close. */
export function installWebhookDelivery(app: FastifyInstance, worker: WebhookWorker): void {
  app.addHook('onReady', async () => worker.start());
  app.addHook('onClose', async () => worker.stop());
}
