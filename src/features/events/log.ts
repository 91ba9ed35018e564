import { randomUUID } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import type { Executor } from '../../platform/db/database.js';
import type { EventType } from './catalogue.js';
import { insertEvent, insertEvents } from './repository.js';
import { enqueueDeliveries, enqueueDeliveriesMany } from './webhooks/repository.js';

/** One change an application may care about (docs/events.md). */
export interface EventInput {
  type: EventType;
  /** `admin:<key name>` for an operator, an identity id for a person, null for the service. */
  actor: string | null;
  identityId?: string | null;
  sessionId?: string | null;
  organizationId?: string | null;
  /** The object as the admin API shows it: never a secret, code, hash or token. */
  data: Record<string, unknown>;
}

/**
 * Appends events in the caller's transaction: the event and its deliveries (one per enabled
 * endpoint whose filters take it) commit or roll back with the change they tell of. The event
 * has no `seq` yet: the sequencer stamps it once it has committed (./sequencer.ts).
 */
export class EventLog {
  constructor(private readonly clock: Clock) {}

  /** Several events of one type without an organization in two statements (an import's batch). */
  async appendMany(
    trx: Executor,
    type: EventType,
    inputs: Omit<EventInput, 'type' | 'organizationId'>[],
  ): Promise<void> {
    if (inputs.length === 0) return;
    const now = this.clock.now();
    const rows = inputs.map((input) => ({
      id: randomUUID(),
      type,
      occurredAt: now,
      actor: input.actor,
      identityId: input.identityId ?? null,
      sessionId: input.sessionId ?? null,
      organizationId: null,
      data: input.data,
    }));
    await insertEvents(trx, rows);
    await enqueueDeliveriesMany(trx, { ids: rows.map((r) => r.id), type, now });
  }

  async append(trx: Executor, input: EventInput): Promise<{ id: string }> {
    const id = randomUUID();
    const now = this.clock.now();
    const organizationId = input.organizationId ?? null;
    await insertEvent(trx, {
      id,
      type: input.type,
      occurredAt: now,
      actor: input.actor,
      identityId: input.identityId ?? null,
      sessionId: input.sessionId ?? null,
      organizationId,
      data: input.data,
    });
    await enqueueDeliveries(trx, { id, type: input.type, organizationId, now });
    return { id };
  }
}
