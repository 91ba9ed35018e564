import { Readable } from 'node:stream';
import type { Database } from '../../../platform/db/database.js';
import { Problem } from '../../../platform/problem.js';
import { eventById, eventsAfter, type StoredEvent } from '../repository.js';
import { stampCommitted } from '../sequencer.js';
import type { EventsQuery, EventsStreamQuery } from './schemas.js';

/** Events read per statement by the NDJSON stream. */
const STREAM_BATCH = 500;

/** An event as the pull API shows it. */
function item(e: StoredEvent) {
  return {
    id: e.id,
    seq: Number(e.seq),
    type: e.type,
    occurredAt: new Date(e.occurredAt).toISOString(),
    actor: e.actor,
    identityId: e.identityId,
    sessionId: e.sessionId,
    organizationId: e.organizationId,
    data: (typeof e.data === 'string' ? JSON.parse(e.data) : e.data) as Record<string, unknown>,
  };
}

const typesOf = (types: string | undefined) => (types ? [...new Set(types.split(','))] : []);

/** What the pull API uses. */
export interface EventReadDeps {
  database: Database;
}

/**
 * The pull API (docs/events.md, "Pulling"): events in seq order after a cursor. Committed events
 * are stamped first, so a page shows every event committed before the request; since seqs are
 * handed out only after commit and in one order, a later page never holds a seq below the cursor.
 */
export class EventReader {
  constructor(private readonly deps: EventReadDeps) {}

  async page(query: EventsQuery) {
    const { db } = this.deps.database;
    await stampCommitted(db);
    const limit = query.limit ?? 50;
    const afterSeq = query.after === undefined ? 0 : Number(query.after);
    const types = typesOf(query.types);
    const rows = await eventsAfter(db, { afterSeq, types, limit: limit + 1 });
    const hasNextPage = rows.length > limit;
    const items = rows.slice(0, limit).map(item);
    const last = items.at(-1);
    const nextCursor = last ? String(last.seq) : (query.after ?? null);
    return { items, pageInfo: { hasNextPage, nextCursor } };
  }

  /** One event, whole: what a webhook whose `data` was left out (too large) points to. */
  async one(id: string) {
    const { db } = this.deps.database;
    await stampCommitted(db);
    const row = await eventById(db, id);
    if (!row) throw new Problem('admin.event_not_found');
    return item(row);
  }

  /**
   * The same events as NDJSON, one item per line, at most `limit` of them, read STREAM_BATCH per
   * statement as the client takes them. The next call's cursor is the last line's `seq` (the
   * `after` asked when there is no line).
   */
  async stream(query: EventsStreamQuery): Promise<Readable> {
    const { db } = this.deps.database;
    await stampCommitted(db);
    const types = typesOf(query.types);
    const limit = query.limit ?? 1000;
    async function* lines(): AsyncGenerator<string> {
      let after = query.after === undefined ? 0 : Number(query.after);
      let left = limit;
      while (left > 0) {
        const rows = await eventsAfter(db, { afterSeq: after, types, limit: Math.min(STREAM_BATCH, left) });
        if (rows.length > 0) yield `${rows.map((r) => JSON.stringify(item(r))).join('\n')}\n`;
        if (rows.length < Math.min(STREAM_BATCH, left)) return;
        left -= rows.length;
        after = Number(rows[rows.length - 1].seq);
      }
    }
    return Readable.from(lines(), { objectMode: false });
  }
}
