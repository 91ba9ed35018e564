import { createHmac, randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Db, Executor } from '../db/database.js';
import {
  insertRecord,
  insertRecords,
  lockHead,
  readHead,
  recordsAfter,
  recordsBatch,
  recordsPage,
  type StoredRecord,
  type StoredRecordWithPrevious,
} from './repository.js';

/**
 * One thing that happened, e.g. identity.sessions.revoked_everywhere, identity.account.locked,
 * identity.sign_in_method.verified, identity.second_factor.removed, sign-up, sign-in, password and
 * recovery-code events.
 *
 * `details` is kept for ever and readable by every operator: it must never hold a secret — no
 * password, code, token, key, hash or seal of one — only identifiers, counts and flags.
 */
export interface AuditEvent {
  name: string;
  actor: string | null;
  target: string | null;
  outcome: 'success' | 'failure';
  details?: Record<string, string | number | boolean | null>;
}

/** The content a seal covers. */
export interface AuditRecordContent {
  seq: number;
  id: string;
  /** ISO 8601 with milliseconds, UTC. */
  occurredAt: string;
  name: string;
  actor: string | null;
  target: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

/** A record as an operator reads it, with whether its seal verifies against the one before it. */
export interface VerifiedRecord extends AuditRecordContent {
  verified: boolean;
}

export type ChainVerification =
  | { ok: true; count: number }
  | {
      ok: false;
      /** Records that verified before the broken one. */
      count: number;
      /** id is null when the record is missing from the end of the chain (the head names it). */
      brokenAt: { seq: number; id: string | null };
      /**
       * The records verify but the head's own seal does not: the newest records were removed and
       * the head rewritten to an earlier one (brokenAt names the first record that is gone).
       */
      truncated?: true;
    }
  | {
      ok: false;
      /** Every record verifies, but none has the anchor's seq and seal (see AuditAnchor). */
      count: number;
      behindAnchor: AuditAnchor;
    };

/**
 * A head logged earlier (`SEQ:SEAL`, the `anchor` of the `audit head` log line), kept outside the
 * database. A record with that seq and seal can only exist if the chain once reached it, and the
 * records after it are append-only: a database restored to an earlier state, its head included,
 * verifies against the key alone but has no such record.
 */
export interface AuditAnchor {
  seq: number;
  seal: string;
}

/** Parses `SEQ:SEAL` (a positive sequence and a 64-hex seal); null when it is not one. */
export function parseAnchor(text: string): AuditAnchor | null {
  const m = /^([1-9][0-9]{0,15}):([0-9a-f]{64})$/.exec(text);
  if (!m) return null;
  const seq = Number(m[1]);
  return Number.isSafeInteger(seq) ? { seq, seal: m[2] } : null;
}

/** JSON with object keys sorted (by UTF-16 code units) and no whitespace. */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonicalJson: numbers must be finite');
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
      const obj = value as Record<string, unknown>;
      const parts: string[] = [];
      for (const key of Object.keys(obj).sort()) {
        if (obj[key] === undefined) continue;
        parts.push(`${JSON.stringify(key)}:${canonicalJson(obj[key])}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      throw new TypeError(`canonicalJson: cannot encode a ${typeof value}`);
  }
}

/** The head's own seal: it names the record the chain ends at, and only the key can make it. */
export function computeHeadSeal(key: Buffer, seq: number, seal: string): string {
  return createHmac('sha256', key).update(`head:${seq}:${seal}`).digest('hex');
}

/** hex HMAC-SHA256(key, prevSeal + '\n' + canonicalJson(record)). */
export function computeSeal(key: Buffer, prevSeal: string, record: AuditRecordContent): string {
  return createHmac('sha256', key)
    .update(prevSeal + '\n' + canonicalJson(record))
    .digest('hex');
}

function toIso(value: unknown): string {
  const date = value instanceof Date ? value : new Date(String(value));
  return date.toISOString();
}

function toDetails(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return JSON.parse(value) as Record<string, unknown>;
  return (value ?? {}) as Record<string, unknown>;
}

/**
 * Called by `append` inside the appending transaction, after the record is written: whatever it
 * writes commits or rolls back with the change the record describes. Registered by the wiring
 * (src/context.ts), so the platform names no feature.
 */
export type AuditObserver = (trx: Executor, event: AuditEvent, occurredAt: Date) => Promise<void>;

export class AuditLog {
  readonly #observers: AuditObserver[] = [];

  /** key: config.keys.auditSeal (purposeKeys), made by the caller. */
  constructor(
    private readonly key: Buffer,
    private readonly clock: Clock,
  ) {}

  /** Adds an observer of every successful append (see AuditObserver). */
  observe(observer: AuditObserver): void {
    this.#observers.push(observer);
  }

  /**
   * Appends in the caller's transaction (READ COMMITTED): locks the head row, seals, inserts the
   * record and moves the head. The lock serialises every append until the transaction ends, so call
   * it last in the transaction. Rolled back with the transaction, so no record outlives its change.
   */
  async append(trx: Executor, event: AuditEvent): Promise<{ id: string; seq: number }> {
    const details = event.details ?? {};
    // Fails here, before any lock, on a value the seal cannot cover.
    canonicalJson(details);
    const row = await lockHead(trx);
    if (!row) throw new Error('audit_head is missing: run the migrations');
    const seq = Number(row.seq) + 1;
    const id = randomUUID();
    const occurredAt = this.clock.now();
    const record: AuditRecordContent = {
      seq,
      id,
      occurredAt: occurredAt.toISOString(),
      name: event.name,
      actor: event.actor,
      target: event.target,
      outcome: event.outcome,
      details,
    };
    const seal = computeSeal(this.key, row.seal, record);
    await insertRecord(trx, { ...record, occurredAt, seal, headSeal: computeHeadSeal(this.key, seq, seal) });
    for (const observer of this.#observers) await observer(trx, event, occurredAt);
    return { id, seq };
  }

  /**
   * Appends several records in one lock of the head, one insert and one move of the head (an
   * import's batch): the same chain, seal after seal, as as many appends would make.
   */
  async appendMany(trx: Executor, events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    for (const e of events) canonicalJson(e.details ?? {});
    const row = await lockHead(trx);
    if (!row) throw new Error('audit_head is missing: run the migrations');
    let seq = Number(row.seq);
    let previous = row.seal;
    const occurredAt = this.clock.now();
    const records: Parameters<typeof insertRecords>[1] = [];
    for (const event of events) {
      seq++;
      const record: AuditRecordContent = {
        seq,
        id: randomUUID(),
        occurredAt: occurredAt.toISOString(),
        name: event.name,
        actor: event.actor,
        target: event.target,
        outcome: event.outcome,
        details: event.details ?? {},
      };
      const seal = computeSeal(this.key, previous, record);
      records.push({ ...record, occurredAt, seal, headSeal: computeHeadSeal(this.key, seq, seal) });
      previous = seal;
    }
    await insertRecords(trx, records);
    for (const event of events)
      for (const observer of this.#observers) await observer(trx, event, occurredAt);
  }

  /** The commonest record: an identity's own successful act on itself (sign-out everywhere...). */
  appendOwn(
    trx: Executor,
    name: string,
    identityId: string,
    details?: AuditEvent['details'],
  ): Promise<{ id: string; seq: number }> {
    return this.append(trx, { name, actor: identityId, target: identityId, outcome: 'success', details });
  }

  /**
   * Newest first, `limit` records before `beforeSeq`, naming `identityId` (as actor or target) or
   * any identity when null; each with its verified flag (one statement reads the previous seals).
   */
  async page(
    db: Executor,
    q: { identityId: string | null; beforeSeq: number | null; limit: number },
  ): Promise<VerifiedRecord[]> {
    return (await recordsPage(db, q)).map((r) => this.#verified(r));
  }

  /** Ascending, `limit` records after `afterSeq`; each with its verified flag. */
  async batch(
    db: Executor,
    q: { identityId: string | null; afterSeq: number; limit: number },
  ): Promise<VerifiedRecord[]> {
    return (await recordsBatch(db, q)).map((r) => this.#verified(r));
  }

  /**
   * A record verifies when its seal is the one the key makes from the previous record's seal (the
   * empty string before the first) and its content. A record whose predecessor is gone does not.
   */
  #verified(r: StoredRecordWithPrevious): VerifiedRecord {
    const content = contentOf(r);
    const prev = content.seq === 1 ? '' : r.prevSeal;
    const verified = prev !== null && computeSeal(this.key, prev, content) === r.seal;
    return { ...content, verified };
  }
}

/** The sealed content of a stored record. */
function contentOf(r: StoredRecord): AuditRecordContent {
  return {
    seq: Number(r.seq),
    id: String(r.id),
    occurredAt: toIso(r.occurredAt),
    name: r.name,
    actor: r.actor,
    target: r.target,
    outcome: r.outcome,
    details: toDetails(r.details),
  };
}

const BATCH = 1000;

/**
 * Walks every record in seq order, from one snapshot. Broken: the first record whose seal does not
 * verify or whose seq skips (a deleted record shows as a skip at the next one), or, past the last
 * record, a head that names a later record (records deleted from the end), or a head whose own
 * seal does not verify (records deleted from the end and the head rewritten to match). With an
 * anchor, a chain that verifies but holds no record with the anchor's seq and seal is behind it.
 */
export async function verifyChain(db: Db, key: Buffer, anchor?: AuditAnchor): Promise<ChainVerification> {
  // One consistent view, nothing written.
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      const head = await readHead(trx);
      let prevSeal = '';
      let expected = 1;
      let count = 0;
      let anchored = false;
      for (;;) {
        // The first batch has no lower bound: a stray record before seq 1 is a skip too.
        const rows = await recordsAfter(trx, count === 0 ? null : expected - 1, BATCH);
        for (const r of rows) {
          const content = contentOf(r);
          const { seq, id } = content;
          if (seq !== expected) return { ok: false, count, brokenAt: { seq, id } };
          const seal = computeSeal(key, prevSeal, content);
          if (seal !== r.seal) return { ok: false, count, brokenAt: { seq, id } };
          if (anchor && seq === anchor.seq && r.seal === anchor.seal) anchored = true;
          prevSeal = r.seal;
          expected++;
          count++;
        }
        if (rows.length < BATCH) break;
      }
      if (head && Number(head.seq) >= expected) {
        return { ok: false, count, brokenAt: { seq: expected, id: null } };
      }
      // The chain ends where the head says; the head must also be one the key sealed there.
      if (head && count > 0 && head.headSeal !== computeHeadSeal(key, Number(head.seq), head.seal)) {
        return { ok: false, count, brokenAt: { seq: expected, id: null }, truncated: true };
      }
      if (anchor && !anchored) return { ok: false, count, behindAnchor: anchor };
      return { ok: true, count };
    });
}
