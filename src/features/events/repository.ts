import type { Executor } from '../../platform/db/database.js';

// The events table and its sequencer: the one writer of `events` and `event_sequencer`.

export interface NewEvent {
  id: string;
  type: string;
  occurredAt: Date;
  actor: string | null;
  identityId: string | null;
  sessionId: string | null;
  organizationId: string | null;
  data: Record<string, unknown>;
}

export interface StoredEvent {
  id: string;
  seq: number;
  type: string;
  occurredAt: Date;
  actor: string | null;
  identityId: string | null;
  sessionId: string | null;
  organizationId: string | null;
  data: unknown;
}

/**
 * Erasure: the identity's earlier events keep their envelope (type, time, actor, ids) and lose
 * their `data`, which may name its addresses, labels or an invitation's address (docs/events.md,
 * "Erasure"). A delivery still pending sends the redacted body.
 */
export async function redactIdentityEvents(trx: Executor, identityId: string): Promise<void> {
  await trx
    .updateTable('events')
    .set({ data: JSON.stringify({ redacted: true }) })
    .where('identity_id', '=', identityId)
    .execute();
}

/** Unstamped (seq null): the sequencer gives it its seq once it has committed. */
export async function insertEvent(trx: Executor, e: NewEvent): Promise<void> {
  await trx
    .insertInto('events')
    .values({
      id: e.id,
      type: e.type,
      occurred_at: e.occurredAt,
      actor: e.actor,
      identity_id: e.identityId,
      session_id: e.sessionId,
      organization_id: e.organizationId,
      data: JSON.stringify(e.data),
    })
    .execute();
}

/** Several events in one statement (an import's batch). */
export async function insertEvents(trx: Executor, es: NewEvent[]): Promise<void> {
  if (es.length === 0) return;
  await trx
    .insertInto('events')
    .values(
      es.map((e) => ({
        id: e.id,
        type: e.type,
        occurred_at: e.occurredAt,
        actor: e.actor,
        identity_id: e.identityId,
        session_id: e.sessionId,
        organization_id: e.organizationId,
        data: JSON.stringify(e.data),
      })),
    )
    .execute();
}

/**
 * Stamps up to `limit` committed, unstamped events with the next seqs, oldest first (by their instant, then their append order), in the
 * caller's transaction (READ COMMITTED). The sequencer row is locked by a statement of its own
 * first, so the next statement's snapshot is taken after any earlier stamper committed: two
 * stampers never interleave, and a seq is handed out only once every smaller one has committed.
 * Returns how many were stamped.
 */
export async function stampEvents(trx: Executor, limit: number): Promise<number> {
  const head = await trx
    .selectFrom('event_sequencer')
    .select('last_seq')
    .where('id', '=', true)
    .forUpdate()
    .executeTakeFirstOrThrow();
  const r = await trx
    .with('todo', (db) =>
      db
        .selectFrom((sub) =>
          sub
            .selectFrom('events')
            .select(['id', 'occurred_at', 'appended'])
            .where('seq', 'is', null)
            .orderBy('occurred_at')
            .orderBy('appended')
            .limit(limit)
            .as('e'),
        )
        .select((eb) => [
          'e.id',
          eb(
            eb.cast<number>(eb.val(head.last_seq), 'bigint'),
            '+',
            eb.fn.agg<number>('row_number').over((ob) => ob.orderBy('e.occurred_at').orderBy('e.appended')),
          ).as('seq'),
        ]),
    )
    .updateTable('events')
    .from('todo')
    .set((eb) => ({ seq: eb.ref('todo.seq') }))
    .whereRef('events.id', '=', 'todo.id')
    .returning('events.seq')
    .execute();
  if (r.length === 0) return 0;
  await trx
    .updateTable('event_sequencer')
    .set({ last_seq: head.last_seq + r.length })
    .where('id', '=', true)
    .execute();
  return r.length;
}

const eventColumns = [
  'id',
  'seq',
  'type',
  'occurred_at as occurredAt',
  'actor',
  'identity_id as identityId',
  'session_id as sessionId',
  'organization_id as organizationId',
  'data',
] as const;

/** Ascending, `limit` stamped events after `afterSeq`, of the given types (any when empty). */
export function eventsAfter(
  db: Executor,
  q: { afterSeq: number; types: string[]; limit: number },
): Promise<StoredEvent[]> {
  let query = db
    .selectFrom('events')
    .select(eventColumns)
    .where('seq', '>', q.afterSeq)
    .orderBy('seq')
    .limit(q.limit);
  if (q.types.length > 0) query = query.where('type', 'in', q.types);
  return query.execute() as Promise<StoredEvent[]>;
}

/** One stamped event (one not stamped yet is not shown: the pull API stamps before it reads). */
export function eventById(db: Executor, id: string): Promise<StoredEvent | undefined> {
  return db
    .selectFrom('events')
    .select(eventColumns)
    .where('id', '=', id)
    .where('seq', 'is not', null)
    .executeTakeFirst() as Promise<StoredEvent | undefined>;
}

/**
 * Deletes up to `limit` stamped events that occurred before `before`, lowest seq first (their
 * deliveries go with them). Unstamped ones wait for their seq, so a reader never sees a hole open
 * above its cursor. Returns how many.
 */
export async function pruneEvents(db: Executor, before: Date, limit: number): Promise<number> {
  const r = await db
    .deleteFrom('events')
    .where(
      'id',
      'in',
      db
        .selectFrom('events')
        .select('id')
        .where('seq', 'is not', null)
        .where('occurred_at', '<', before)
        .orderBy('seq')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
