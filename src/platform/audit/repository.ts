import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../db/database.js';

/** A record as stored, under the domain's names (seq is int8: a number here, see database.ts). */
export interface StoredRecord {
  seq: number;
  id: string;
  occurredAt: Date | string;
  name: string;
  actor: string | null;
  target: string | null;
  outcome: string;
  details: unknown;
  seal: string;
}

export interface Head {
  seq: number;
  seal: string;
  /** HMAC(audit key, "head:<seq>:<seal>"); empty until the first append after migration 0010. */
  headSeal: string;
}

/** The head row, locked: every append waits here for the one before it to commit. */
export async function lockHead(trx: Executor): Promise<{ seq: number; seal: string } | undefined> {
  return trx
    .selectFrom('audit_head')
    .select(['seq', 'seal'])
    .where('id', '=', 1)
    .forUpdate()
    .executeTakeFirst();
}

export async function readHead(trx: Executor): Promise<Head | undefined> {
  return trx
    .selectFrom('audit_head')
    .select(['seq', 'seal', 'head_seal as headSeal'])
    .where('id', '=', 1)
    .executeTakeFirst();
}

export async function insertRecord(
  trx: Executor,
  r: {
    seq: number;
    id: string;
    occurredAt: Date;
    name: string;
    actor: string | null;
    target: string | null;
    outcome: string;
    details: Record<string, unknown>;
    seal: string;
    headSeal: string;
  },
): Promise<void> {
  await trx
    .insertInto('audit_records')
    .values({
      seq: r.seq,
      id: r.id,
      occurred_at: r.occurredAt,
      name: r.name,
      actor: r.actor,
      target: r.target,
      outcome: r.outcome,
      // JSON text into the jsonb column (the server parses it), as both drivers bind it alike.
      details: JSON.stringify(r.details),
      seal: r.seal,
    })
    .execute();
  await trx
    .updateTable('audit_head')
    .set({ seq: r.seq, seal: r.seal, head_seal: r.headSeal })
    .where('id', '=', 1)
    .execute();
}

/** Several records in one statement, then the head once at the last of them (a bulk append). */
export async function insertRecords(trx: Executor, rs: Parameters<typeof insertRecord>[1][]): Promise<void> {
  const last = rs.at(-1);
  if (!last) return;
  await trx
    .insertInto('audit_records')
    .values(
      rs.map((r) => ({
        seq: r.seq,
        id: r.id,
        occurred_at: r.occurredAt,
        name: r.name,
        actor: r.actor,
        target: r.target,
        outcome: r.outcome,
        details: JSON.stringify(r.details),
        seal: r.seal,
      })),
    )
    .execute();
  await trx
    .updateTable('audit_head')
    .set({ seq: last.seq, seal: last.seal, head_seal: last.headSeal })
    .where('id', '=', 1)
    .execute();
}

/** Up to `limit` records in seq order after `afterSeq` (every record from the start when null). */
export async function recordsAfter(
  trx: Executor,
  afterSeq: number | null,
  limit: number,
): Promise<StoredRecord[]> {
  return trx
    .selectFrom('audit_records')
    .select([
      'seq',
      'id',
      'occurred_at as occurredAt',
      'name',
      'actor',
      'target',
      'outcome',
      'details',
      'seal',
    ])
    .$if(afterSeq !== null, (q) => q.where('seq', '>', afterSeq as number))
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** A stored record with the seal of the record before it (null for the first or a missing one). */
export interface StoredRecordWithPrevious extends StoredRecord {
  prevSeal: string | null;
}

/**
 * The seqs of up to `limit` records in one direction from a position: every record, or those naming
 * `identityId` as actor or target, each side read along its own index (actor, seq) / (target, seq).
 */
function window(
  q: { identityId: string | null; limit: number },
  bound: RawBuilder<unknown>,
  order: RawBuilder<unknown>,
) {
  // raw: the window's bound and direction are fragments of the statement withPrevious runs.
  if (q.identityId === null) {
    return sql`SELECT seq FROM audit_records WHERE ${bound} ORDER BY seq ${order} LIMIT ${q.limit}`;
  }
  // raw: a UNION of two parenthesised selects, each ordered and limited along its own index.
  return sql`
    (SELECT seq FROM audit_records WHERE actor = ${q.identityId} AND ${bound} ORDER BY seq ${order} LIMIT ${q.limit})
    UNION
    (SELECT seq FROM audit_records WHERE target = ${q.identityId} AND ${bound} ORDER BY seq ${order} LIMIT ${q.limit})`;
}

/** The records of a window, each with the seal of the record before it (by seq - 1), in one statement. */
async function withPrevious(
  trx: Executor,
  q: { identityId: string | null; limit: number },
  bound: RawBuilder<unknown>,
  order: RawBuilder<unknown>,
): Promise<StoredRecordWithPrevious[]> {
  // raw: a CTE over a UNION of two separately ordered and limited index scans, joined to the
  // record before each; the builder would need the same SQL in pieces, less clearly.
  const r = await sql<StoredRecordWithPrevious>`
    WITH w AS (${window(q, bound, order)})
    SELECT r.seq, r.id, r.occurred_at AS "occurredAt", r.name, r.actor, r.target, r.outcome, r.details, r.seal,
           p.seal AS "prevSeal"
    FROM w JOIN audit_records r ON r.seq = w.seq LEFT JOIN audit_records p ON p.seq = r.seq - 1
    ORDER BY r.seq ${order} LIMIT ${q.limit}`.execute(trx);
  return r.rows;
}

/** One page of records, newest first, before `beforeSeq` (from the newest when null). */
export function recordsPage(
  trx: Executor,
  q: { identityId: string | null; beforeSeq: number | null; limit: number },
): Promise<StoredRecordWithPrevious[]> {
  // raw: fragments of the windowed statement above.
  const bound = q.beforeSeq === null ? sql`TRUE` : sql`seq < ${q.beforeSeq}`;
  return withPrevious(trx, q, bound, sql`DESC`);
}

/** Up to `limit` records in ascending seq after `afterSeq`. */
export function recordsBatch(
  trx: Executor,
  q: { identityId: string | null; afterSeq: number; limit: number },
): Promise<StoredRecordWithPrevious[]> {
  // raw: fragments of the windowed statement above.
  return withPrevious(trx, q, sql`seq > ${q.afterSeq}`, sql`ASC`);
}
