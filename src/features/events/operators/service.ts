import type { Database } from '../../../platform/db/database.js';
import { eventsAfter } from '../repository.js';
import { stampCommitted } from '../sequencer.js';
import type { EventsQuery } from './schemas.js';

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
    const types = query.types ? [...new Set(query.types.split(','))] : [];
    const rows = await eventsAfter(db, { afterSeq, types, limit: limit + 1 });
    const hasNextPage = rows.length > limit;
    const items = rows.slice(0, limit).map((e) => ({
      id: e.id,
      seq: Number(e.seq),
      type: e.type,
      occurredAt: new Date(e.occurredAt).toISOString(),
      actor: e.actor,
      identityId: e.identityId,
      sessionId: e.sessionId,
      organizationId: e.organizationId,
      data: (typeof e.data === 'string' ? JSON.parse(e.data) : e.data) as Record<string, unknown>,
    }));
    const last = items.at(-1);
    const nextCursor = last ? String(last.seq) : (query.after ?? null);
    return { items, pageInfo: { hasNextPage, nextCursor } };
  }
}
