import { sql } from 'kysely';
import type { Executor } from '../../../platform/db/database.js';
import type { KeysetWindow } from '../../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../../platform/pagination/repository.js';

// Webhook endpoints and their deliveries (the outbox): the one writer of both tables.

export interface EndpointRow {
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  organizationId: string | null;
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  previousSecretUntil: Date | null;
  sealedEd25519Key: string | null;
  ed25519PublicKey: string | null;
  disabledAt: Date | null;
  disabledReason: string | null;
  /** The first failed attempt since the last success; null while it succeeds. */
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const endpointColumns = [
  'id',
  'url',
  'description',
  'event_types as eventTypes',
  'organization_id as organizationId',
  'sealed_secret as sealedSecret',
  'sealed_previous_secret as sealedPreviousSecret',
  'previous_secret_until as previousSecretUntil',
  'sealed_ed25519_key as sealedEd25519Key',
  'ed25519_public_key as ed25519PublicKey',
  'disabled_at as disabledAt',
  'disabled_reason as disabledReason',
  'failing_since as failingSince',
  'created_at as createdAt',
  'updated_at as updatedAt',
] as const;

export async function insertEndpoint(trx: Executor, e: Omit<EndpointRow, 'failingSince'>): Promise<void> {
  await trx
    .insertInto('webhook_endpoints')
    .values({
      id: e.id,
      url: e.url,
      description: e.description,
      event_types: e.eventTypes,
      organization_id: e.organizationId,
      sealed_secret: e.sealedSecret,
      sealed_previous_secret: e.sealedPreviousSecret,
      previous_secret_until: e.previousSecretUntil,
      sealed_ed25519_key: e.sealedEd25519Key,
      ed25519_public_key: e.ed25519PublicKey,
      disabled_at: e.disabledAt,
      disabled_reason: e.disabledReason,
      created_at: e.createdAt,
      updated_at: e.updatedAt,
    })
    .execute();
}

/** Newest first, disabled ones included. */
export function endpointsPage(db: Executor, window: KeysetWindow): Promise<EndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .select(endpointColumns)
    .where(afterPosition('created_at', window, 'id'))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/** One endpoint; with `lock`, its row locked until the transaction ends. */
export function endpointById(db: Executor, id: string, lock = false): Promise<EndpointRow | undefined> {
  const q = db.selectFrom('webhook_endpoints').select(endpointColumns).where('id', '=', id);
  return (lock ? q.forUpdate() : q).executeTakeFirst();
}

export type EndpointChange = Partial<
  Pick<
    EndpointRow,
    | 'url'
    | 'description'
    | 'eventTypes'
    | 'organizationId'
    | 'sealedSecret'
    | 'sealedPreviousSecret'
    | 'previousSecretUntil'
    | 'sealedEd25519Key'
    | 'ed25519PublicKey'
    | 'disabledAt'
    | 'disabledReason'
    | 'failingSince'
  >
> & { updatedAt: Date };

export async function updateEndpoint(trx: Executor, id: string, c: EndpointChange): Promise<boolean> {
  const r = await trx
    .updateTable('webhook_endpoints')
    .set({
      ...(c.url !== undefined ? { url: c.url } : {}),
      ...(c.description !== undefined ? { description: c.description } : {}),
      ...(c.eventTypes !== undefined ? { event_types: c.eventTypes } : {}),
      ...(c.organizationId !== undefined ? { organization_id: c.organizationId } : {}),
      ...(c.sealedSecret !== undefined ? { sealed_secret: c.sealedSecret } : {}),
      ...(c.sealedPreviousSecret !== undefined ? { sealed_previous_secret: c.sealedPreviousSecret } : {}),
      ...(c.previousSecretUntil !== undefined ? { previous_secret_until: c.previousSecretUntil } : {}),
      ...(c.sealedEd25519Key !== undefined ? { sealed_ed25519_key: c.sealedEd25519Key } : {}),
      ...(c.ed25519PublicKey !== undefined ? { ed25519_public_key: c.ed25519PublicKey } : {}),
      ...(c.disabledAt !== undefined ? { disabled_at: c.disabledAt } : {}),
      ...(c.disabledReason !== undefined ? { disabled_reason: c.disabledReason } : {}),
      ...(c.failingSince !== undefined ? { failing_since: c.failingSince } : {}),
      updated_at: c.updatedAt,
    })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The endpoint and its deliveries. */
export async function deleteEndpoint(trx: Executor, id: string): Promise<boolean> {
  const r = await trx.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/**
 * Disabled by the delivery (`gone`: a 410; `failing`: 5 days without a success), unless it is
 * already disabled. The endpoint as it is after, when this call disabled it.
 */
export function disableEndpoint(
  trx: Executor,
  id: string,
  now: Date,
  reason: 'gone' | 'failing',
  failingBefore?: Date,
): Promise<EndpointRow | undefined> {
  let q = trx
    .updateTable('webhook_endpoints')
    .set({ disabled_at: now, disabled_reason: reason, updated_at: now })
    .where('id', '=', id)
    .where('disabled_at', 'is', null);
  if (failingBefore) q = q.where('failing_since', '<=', failingBefore);
  return q.returning(endpointColumns).executeTakeFirst();
}

/** A failed attempt at `now`: the endpoint is failing since then, unless it already was. */
export async function markFailing(trx: Executor, id: string, now: Date): Promise<void> {
  await trx
    .updateTable('webhook_endpoints')
    .set({ failing_since: now })
    .where('id', '=', id)
    .where('failing_since', 'is', null)
    .execute();
}

/** A success: the endpoint is no longer failing (no write when it was not). */
export async function clearFailing(db: Executor, id: string): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: null })
    .where('id', '=', id)
    .where('failing_since', 'is not', null)
    .execute();
}

/**
 * In the event's own transaction: one pending delivery, due now, for every enabled endpoint whose
 * type filter (empty: every type) and organization filter (null: every event) take the event.
 */
export async function enqueueDeliveries(
  trx: Executor,
  e: { id: string; type: string; organizationId: string | null; now: Date },
): Promise<number> {
  const r = await trx
    .insertInto('webhook_deliveries')
    .columns(['id', 'endpoint_id', 'event_id', 'status', 'due_at', 'created_at'])
    .expression((eb) =>
      eb
        .selectFrom('webhook_endpoints as w')
        .select([
          eb.fn<string>('gen_random_uuid', []).as('id'),
          'w.id as endpoint_id',
          eb.val(e.id).as('event_id'),
          eb.val('pending').as('status'),
          eb.val(e.now).as('due_at'),
          eb.val(e.now).as('created_at'),
        ])
        .where('w.disabled_at', 'is', null)
        .where((w) =>
          w.or([
            w(w.fn('cardinality', ['w.event_types']), '=', 0),
            w(w.val(e.type), '=', w.fn.any('w.event_types')),
          ]),
        )
        .where((w) =>
          w.or([w('w.organization_id', 'is', null), w('w.organization_id', '=', e.organizationId)]),
        ),
    )
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0);
}

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  attempts: number;
  eventId: string;
  type: string;
  occurredAt: Date;
  actor: string | null;
  identityId: string | null;
  sessionId: string | null;
  organizationId: string | null;
  data: unknown;
  endpointId: string;
  url: string;
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  previousSecretUntil: Date | null;
  sealedEd25519Key: string | null;
}

/**
 * One statement, committed on its own: up to `limit` pending deliveries due by `now`, of enabled
 * endpoints, whose lease (if any) has run out, locked FOR UPDATE SKIP LOCKED (another instance's
 * claim in progress is passed over, one committed is seen by the re-check) and leased to
 * `leaseId` until `leaseUntil`, their attempt counted.
 */
export async function claimDue(
  db: Executor,
  q: { now: Date; leaseId: string; leaseUntil: Date; limit: number },
): Promise<ClaimedDelivery[]> {
  const claimed = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      lease_id: q.leaseId,
      lease_until: q.leaseUntil,
      attempts: eb('attempts', '+', 1),
    }))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries as c')
        .innerJoin('webhook_endpoints as w', (j) =>
          j.onRef('w.id', '=', 'c.endpoint_id').on('w.disabled_at', 'is', null),
        )
        .select('c.id')
        .where('c.status', '=', 'pending')
        .where('c.due_at', '<=', q.now)
        .where((c) => c.or([c('c.lease_until', 'is', null), c('c.lease_until', '<=', q.now)]))
        .orderBy('c.due_at')
        .limit(q.limit)
        .forUpdate('c')
        .skipLocked(),
    )
    // Re-checked on the row as it is now: a claim another instance committed meanwhile is seen.
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', q.now)]))
    .returning('id')
    .execute();
  if (claimed.length === 0) return [];
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([
      'd.id',
      'd.attempts',
      'e.id as eventId',
      'e.type',
      'e.occurred_at as occurredAt',
      'e.actor',
      'e.identity_id as identityId',
      'e.session_id as sessionId',
      'e.organization_id as organizationId',
      'e.data',
      'w.id as endpointId',
      'w.url',
      'w.sealed_secret as sealedSecret',
      'w.sealed_previous_secret as sealedPreviousSecret',
      'w.previous_secret_until as previousSecretUntil',
      'w.sealed_ed25519_key as sealedEd25519Key',
    ])
    .where(
      'd.id',
      'in',
      claimed.map((r) => r.id),
    )
    .where('d.lease_id', '=', q.leaseId)
    .execute();
}

export interface AttemptResult {
  status: 'pending' | 'delivered' | 'dead';
  dueAt: Date;
  at: Date;
  statusCode: number | null;
  error: string | null;
  latencyMs: number | null;
}

/** Records an attempt's result and ends the lease, only while `leaseId` still holds it. */
export async function recordAttempt(
  db: Executor,
  id: string,
  leaseId: string,
  r: AttemptResult,
): Promise<boolean> {
  const u = await db
    .updateTable('webhook_deliveries')
    .set({
      status: r.status,
      due_at: r.dueAt,
      lease_id: null,
      lease_until: null,
      last_attempt_at: r.at,
      last_status_code: r.statusCode,
      last_error: r.error,
      last_latency_ms: r.latencyMs,
    })
    .where('id', '=', id)
    .where('lease_id', '=', leaseId)
    .executeTakeFirst();
  return Number(u.numUpdatedRows) > 0;
}

/** Gives a claimed delivery back unsent (shutdown): due as it was, its attempt not counted. */
export async function releaseClaim(db: Executor, id: string, leaseId: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ lease_id: null, lease_until: null, attempts: eb('attempts', '-', 1) }))
    .where('id', '=', id)
    .where('lease_id', '=', leaseId)
    .execute();
}

/** For the metrics, one statement: pending deliveries, and the earliest due time of those due by `now`. */
export async function pendingStats(
  db: Executor,
  now: Date,
): Promise<{ pending: number; oldestDue: Date | null }> {
  const r = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => [
      eb.fn.countAll<string>().as('pending'),
      eb.fn.min<Date | null>('due_at').filterWhere('due_at', '<=', now).as('oldestDue'),
    ])
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return { pending: Number(r.pending), oldestDue: r.oldestDue === null ? null : new Date(r.oldestDue) };
}

export interface DeliveryRow {
  id: string;
  eventId: string;
  status: string;
  attempts: number;
  dueAt: Date;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  createdAt: Date;
}

/** An endpoint's deliveries, newest first. */
export function deliveriesPage(
  db: Executor,
  endpointId: string,
  window: KeysetWindow,
): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .select([
      'id',
      'event_id as eventId',
      'status',
      'attempts',
      'due_at as dueAt',
      'last_attempt_at as lastAttemptAt',
      'last_status_code as lastStatusCode',
      'last_error as lastError',
      'last_latency_ms as lastLatencyMs',
      'created_at as createdAt',
    ])
    .where('endpoint_id', '=', endpointId)
    .where(afterPosition('created_at', window, 'id'))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/**
 * Due again now, its attempts counted from zero, unless a worker holds it; same delivery, so the
 * same `webhook-id`. Returns `resent`, `in_flight` (leased) or `unknown`.
 */
export async function resendDelivery(
  db: Executor,
  endpointId: string,
  deliveryId: string,
  now: Date,
): Promise<'resent' | 'in_flight' | 'unknown'> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', attempts: 0, due_at: now, lease_id: null, lease_until: null })
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) > 0) return 'resent';
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirst();
  return row ? 'in_flight' : 'unknown';
}

/**
 * Every event since `since` the endpoint's filters take and that it did not receive: a dead
 * delivery is due again (attempts from zero), an event it has no delivery of (it was disabled, or
 * added later) gets one. Delivered and pending ones are left as they are. Returns how many.
 */
export async function recoverSince(
  db: Executor,
  endpointId: string,
  since: Date,
  now: Date,
): Promise<number> {
  const r = await db
    .insertInto('webhook_deliveries')
    .columns(['id', 'endpoint_id', 'event_id', 'status', 'due_at', 'created_at'])
    .expression(
      db
        .selectFrom('webhook_endpoints as w')
        .innerJoin('events as e', (j) => j.on('e.occurred_at', '>=', since))
        .select((eb) => [
          eb.fn<string>('gen_random_uuid').as('id'),
          'w.id as endpoint_id',
          'e.id as event_id',
          eb.val('pending').as('status'),
          eb.val(now).as('due_at'),
          eb.val(now).as('created_at'),
        ])
        .where('w.id', '=', endpointId)
        .where((eb) =>
          eb.or([
            eb(eb.fn('cardinality', ['w.event_types']), '=', 0),
            eb('e.type', '=', eb.fn.any('w.event_types')),
          ]),
        )
        .where((eb) =>
          eb.or([
            eb('w.organization_id', 'is', null),
            eb('w.organization_id', '=', eb.ref('e.organization_id')),
          ]),
        ),
    )
    .onConflict((oc) =>
      oc
        .columns(['endpoint_id', 'event_id'])
        .doUpdateSet((eb) => ({ status: 'pending', attempts: 0, due_at: eb.ref('excluded.due_at') }))
        .where('webhook_deliveries.status', '=', 'dead'),
    )
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0);
}

/**
 * enqueueDeliveries for several events of one type without an organization (an import's batch):
 * one statement, every subscribed endpoint times every event.
 */
export async function enqueueDeliveriesMany(
  trx: Executor,
  e: { ids: string[]; type: string; now: Date },
): Promise<void> {
  if (e.ids.length === 0) return;
  // Raw: the builder has no unnest() of a bound array to cross with the endpoints.
  await sql`
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, status, due_at, created_at)
    SELECT gen_random_uuid(), w.id, ev.id, 'pending', ${e.now}, ${e.now}
      FROM webhook_endpoints w CROSS JOIN unnest(${e.ids}::uuid[]) AS ev(id)
     WHERE w.disabled_at IS NULL
       AND w.organization_id IS NULL
       AND (cardinality(w.event_types) = 0 OR ${e.type} = ANY (w.event_types))`.execute(trx);
}

/** The outbox's depth as the health page shows it (docs/admin.md, "Health"). */
export interface DeliveryDepth {
  /** Pending deliveries, in flight and scheduled for later included. */
  pending: number;
  /** Pending, due now and not leased: what the worker has yet to pick up. */
  due: number;
  /** Leased by a worker right now. */
  inFlight: number;
  /** Given up after the last attempt (or the endpoint's disablement). */
  dead: number;
  /** The earliest due instant of a pending delivery not leased; null when none waits. */
  oldestDueAt: Date | null;
  /** Endpoints disabled, and enabled endpoints with a failed attempt since their last success. */
  disabledEndpoints: number;
  failingEndpoints: number;
}

export async function deliveryDepth(db: Executor, now: Date): Promise<DeliveryDepth> {
  const d = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => {
      const pending = eb('status', '=', 'pending');
      const free = eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]);
      return [
        eb.fn.countAll<number>().filterWhere(pending).as('pending'),
        eb.fn
          .countAll<number>()
          .filterWhere(eb.and([pending, eb('due_at', '<=', now), free]))
          .as('due'),
        eb.fn
          .countAll<number>()
          .filterWhere(eb.and([pending, eb('lease_until', '>', now)]))
          .as('inFlight'),
        eb.fn.countAll<number>().filterWhere('status', '=', 'dead').as('dead'),
        eb.fn
          .min<Date | null>('due_at')
          .filterWhere(eb.and([pending, free]))
          .as('oldestDueAt'),
      ];
    })
    .executeTakeFirstOrThrow();
  const e = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => [
      eb.fn.countAll<number>().filterWhere('disabled_at', 'is not', null).as('disabled'),
      eb.fn
        .countAll<number>()
        .filterWhere(eb.and([eb('disabled_at', 'is', null), eb('failing_since', 'is not', null)]))
        .as('failing'),
    ])
    .executeTakeFirstOrThrow();
  return {
    pending: Number(d.pending),
    due: Number(d.due),
    inFlight: Number(d.inFlight),
    dead: Number(d.dead),
    oldestDueAt: d.oldestDueAt === null ? null : new Date(d.oldestDueAt),
    disabledEndpoints: Number(e.disabled),
    failingEndpoints: Number(e.failing),
  };
}
