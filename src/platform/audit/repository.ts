import { sql } from 'kysely';
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
