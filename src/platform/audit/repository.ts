import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../db/database.js';

export interface StoredRecord {
  seq: unknown;
  id: string;
  occurred_at: unknown;
  name: string;
  actor: string | null;
  target: string | null;
  outcome: string;
  details: unknown;
  seal: string;
}

/** The head row, locked: every append waits here for the one before it to commit. */
export async function lockHead(trx: Executor): Promise<{ seq: unknown; seal: string } | undefined> {
  const r = await sql<{ seq: unknown; seal: string }>`
    SELECT seq, seal FROM audit_head WHERE id = 1 FOR UPDATE`.execute(trx);
  return r.rows[0];
}

export async function readHead(
  trx: Executor,
): Promise<{ seq: unknown; seal: string; head_seal: string } | undefined> {
  const r = await sql<{ seq: unknown; seal: string; head_seal: string }>`
    SELECT seq, seal, head_seal FROM audit_head WHERE id = 1`.execute(trx);
  return r.rows[0];
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
  await sql`
    INSERT INTO audit_records (seq, id, occurred_at, name, actor, target, outcome, details, seal)
    VALUES (${r.seq}, ${r.id}, ${r.occurredAt}, ${r.name}, ${r.actor}, ${r.target},
            ${r.outcome}, ${JSON.stringify(r.details)}::jsonb, ${r.seal})`.execute(trx);
  await sql`UPDATE audit_head SET seq = ${r.seq}, seal = ${r.seal}, head_seal = ${r.headSeal} WHERE id = 1`.execute(
    trx,
  );
}

/** A consistent view for the verifier: one snapshot, nothing written. */
export async function snapshot(trx: Executor): Promise<void> {
  await sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`.execute(trx);
}

/** Up to `limit` records in seq order after `afterSeq` (every record from the start when null). */
export async function recordsAfter(
  trx: Executor,
  afterSeq: number | null,
  limit: number,
): Promise<StoredRecord[]> {
  const after = afterSeq === null ? sql`TRUE` : sql`seq > ${afterSeq}`;
  const r = await sql<StoredRecord>`
    SELECT seq, id, occurred_at, name, actor, target, outcome, details, seal
    FROM audit_records WHERE ${after} ORDER BY seq LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/** A stored record with the seal of the record before it (null for the first or a missing one). */
export interface StoredRecordWithPrevious extends StoredRecord {
  prev_seal: string | null;
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
  if (q.identityId === null) {
    return sql`SELECT seq FROM audit_records WHERE ${bound} ORDER BY seq ${order} LIMIT ${q.limit}`;
  }
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
  const r = await sql<StoredRecordWithPrevious>`
    WITH w AS (${window(q, bound, order)})
    SELECT r.seq, r.id, r.occurred_at, r.name, r.actor, r.target, r.outcome, r.details, r.seal,
           p.seal AS prev_seal
    FROM w JOIN audit_records r ON r.seq = w.seq LEFT JOIN audit_records p ON p.seq = r.seq - 1
    ORDER BY r.seq ${order} LIMIT ${q.limit}`.execute(trx);
  return r.rows;
}

/** One page of records, newest first, before `beforeSeq` (from the newest when null). */
export function recordsPage(
  trx: Executor,
  q: { identityId: string | null; beforeSeq: number | null; limit: number },
): Promise<StoredRecordWithPrevious[]> {
  const bound = q.beforeSeq === null ? sql`TRUE` : sql`seq < ${q.beforeSeq}`;
  return withPrevious(trx, q, bound, sql`DESC`);
}

/** Up to `limit` records in ascending seq after `afterSeq`. */
export function recordsBatch(
  trx: Executor,
  q: { identityId: string | null; afterSeq: number; limit: number },
): Promise<StoredRecordWithPrevious[]> {
  return withPrevious(trx, q, sql`seq > ${q.afterSeq}`, sql`ASC`);
}
