import type { Db } from '../../platform/db/database.js';
import { pruneEvents, stampEvents } from './repository.js';

/** Events stamped per transaction: short transactions, however long the backlog. */
const BATCH = 1000;
/** Transactions per call: a bounded amount of work. */
const MAX_BATCHES = 20;

/**
 * Gives every committed, unstamped event its seq (docs/decisions.md, "Events: seq stamped after
 * commit"). Any instance may call it at any time: stampers wait for each other on the sequencer
 * row. Returns how many were stamped.
 */
export async function stampCommitted(db: Db): Promise<number> {
  let total = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await db.transaction().execute((trx) => stampEvents(trx, BATCH));
    total += n;
    if (n < BATCH) break;
  }
  return total;
}

/** Deletes the events older than `before` (EVENT_RETENTION_DAYS), in bounded batches. */
export async function pruneOld(db: Db, before: Date): Promise<number> {
  let total = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await pruneEvents(db, before, BATCH);
    total += n;
    if (n < BATCH) break;
  }
  return total;
}
