import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { deriveKey } from '../crypto/keys.js';
import { type Database, type Db, openDatabase } from '../db/database.js';
import { migrate } from '../db/migrator.js';
import { logAuditHead } from './anchor.js';
import {
  type AuditEvent,
  AuditLog,
  canonicalJson,
  computeHeadSeal,
  parseAnchor,
  verifyChain,
} from './audit.js';

const key = deriveKey(randomBytes(32), 'audit-seal');

function event(i: number): AuditEvent {
  return {
    name: 'identity.sessions.revoked_everywhere',
    actor: `account-${i}`,
    target: `account-${i}`,
    outcome: 'success',
    details: { sessions: i, reason: 'user_request', elevated: true, note: null },
  };
}

async function appendOne(db: Db, log: AuditLog, e: AuditEvent) {
  return db.transaction().execute((trx) => log.append(trx, e));
}

async function seqs(db: Db): Promise<number[]> {
  const { rows } = await sql<{ seq: unknown }>`SELECT seq FROM audit_records ORDER BY seq`.execute(db);
  return rows.map((r) => Number(r.seq));
}

async function recordId(db: Db, seq: number): Promise<string> {
  const { rows } = await sql<{ id: string }>`SELECT id FROM audit_records WHERE seq = ${seq}`.execute(db);
  return rows[0]!.id;
}

async function concurrentAppends(db: Db) {
  const log = new AuditLog(key, new ManualClock());
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      appendOne(db, log, { ...event(i), name: 'identity.account.locked' }),
    ),
  );
  expect(results.map((r) => r.seq).sort((a, b) => a - b)).toEqual(
    Array.from({ length: 20 }, (_, i) => i + 1),
  );
  expect(new Set(results.map((r) => r.id)).size).toBe(20);
  expect(await seqs(db)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  expect(await verifyChain(db, key)).toEqual({ ok: true, count: 20 });
}

describe('canonicalJson', () => {
  it('sorts keys at every depth and has no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 'x', true], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,"x",true]},"b":1}',
    );
    expect(canonicalJson({ z: 'a "quoted"\nline', y: undefined })).toBe('{"z":"a \\"quoted\\"\\nline"}');
    expect(canonicalJson({})).toBe('{}');
  });

  it('refuses what JSON cannot carry faithfully', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson({ a: 10n })).toThrow(TypeError);
  });
});

describe('sealed audit chain (PGlite)', () => {
  let database: Database;
  let db: Db;
  let clock: ManualClock;
  let log: AuditLog;
  let dataDir: string;

  // One in-memory database for the file (starting PGlite takes seconds); each test empties the chain.
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'audit-test-'));
    database = await openDatabase({ url: 'memory://', dataDir });
    db = database.db;
    await migrate(db);
  });

  afterAll(async () => {
    await database?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    await sql`DELETE FROM audit_records`.execute(db);
    await sql`UPDATE audit_head SET seq = 0, seal = '', head_seal = '' WHERE id = 1`.execute(db);
    clock = new ManualClock('2026-03-01T12:00:00.123Z');
    log = new AuditLog(key, clock);
  });

  async function appendFive() {
    const out = [];
    for (let i = 1; i <= 5; i++) {
      out.push(await appendOne(db, log, event(i)));
      clock.advance(1);
    }
    return out;
  }

  it('an empty chain verifies', async () => {
    expect(await verifyChain(db, key)).toEqual({ ok: true, count: 0 });
  });

  it('appends five records with seqs 1..5 that verify', async () => {
    const appended = await appendFive();
    expect(appended.map((a) => a.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(await verifyChain(db, key)).toEqual({ ok: true, count: 5 });
    const { rows } = await sql<{ occurred_at: Date; details: unknown; id: string }>`
      SELECT occurred_at, details, id FROM audit_records WHERE seq = 2`.execute(db);
    expect(rows[0]!.id).toBe(appended[1]!.id);
    expect(new Date(rows[0]!.occurred_at).toISOString()).toBe('2026-03-01T12:00:01.123Z');
    expect(rows[0]!.details).toEqual({ sessions: 2, reason: 'user_request', elevated: true, note: null });
    const head = await sql<{ seq: unknown; seal: string }>`SELECT seq, seal FROM audit_head`.execute(db);
    expect(Number(head.rows[0]!.seq)).toBe(5);
  });

  it('seals as HMAC-SHA256(key, prevSeal + "\\n" + canonical record)', async () => {
    const [first, second] = await appendFive();
    const { rows } = await sql<{ seal: string }>`SELECT seal FROM audit_records ORDER BY seq LIMIT 2`.execute(
      db,
    );
    const content = (seq: number, id: string, at: string, i: number) => ({
      seq,
      id,
      occurredAt: at,
      name: 'identity.sessions.revoked_everywhere',
      actor: `account-${i}`,
      target: `account-${i}`,
      outcome: 'success',
      details: { sessions: i, reason: 'user_request', elevated: true, note: null },
    });
    const seal1 = createHmac('sha256', key)
      .update('\n' + canonicalJson(content(1, first!.id, '2026-03-01T12:00:00.123Z', 1)))
      .digest('hex');
    expect(rows[0]!.seal).toBe(seal1);
    const seal2 = createHmac('sha256', key)
      .update(seal1 + '\n' + canonicalJson(content(2, second!.id, '2026-03-01T12:00:01.123Z', 2)))
      .digest('hex');
    expect(rows[1]!.seal).toBe(seal2);
  });

  it('names a tampered record', async () => {
    await appendFive();
    await sql`UPDATE audit_records SET outcome = 'failure' WHERE seq = 3`.execute(db);
    expect(await verifyChain(db, key)).toEqual({
      ok: false,
      count: 2,
      brokenAt: { seq: 3, id: await recordId(db, 3) },
    });
  });

  it('names a record whose details or time were changed', async () => {
    await appendFive();
    await sql`UPDATE audit_records SET details = '{"sessions": 99, "reason": "user_request", "elevated": true, "note": null}'::jsonb WHERE seq = 2`.execute(
      db,
    );
    expect(await verifyChain(db, key)).toMatchObject({ ok: false, brokenAt: { seq: 2 } });
    await sql`UPDATE audit_records SET details = '{"sessions": 2, "reason": "user_request", "elevated": true, "note": null}'::jsonb WHERE seq = 2`.execute(
      db,
    );
    expect(await verifyChain(db, key)).toEqual({ ok: true, count: 5 });
    await sql`UPDATE audit_records SET occurred_at = occurred_at + interval '1 millisecond' WHERE seq = 4`.execute(
      db,
    );
    expect(await verifyChain(db, key)).toMatchObject({ ok: false, count: 3, brokenAt: { seq: 4 } });
  });

  it('a deleted record breaks the chain at the next one', async () => {
    await appendFive();
    const fourth = await recordId(db, 4);
    await sql`DELETE FROM audit_records WHERE seq = 3`.execute(db);
    expect(await verifyChain(db, key)).toEqual({ ok: false, count: 2, brokenAt: { seq: 4, id: fourth } });
  });

  it('a deleted first record breaks the chain at the second', async () => {
    await appendFive();
    await sql`DELETE FROM audit_records WHERE seq = 1`.execute(db);
    expect(await verifyChain(db, key)).toMatchObject({ ok: false, count: 0, brokenAt: { seq: 2 } });
  });

  it('a record deleted from the end is named from the head', async () => {
    await appendFive();
    await sql`DELETE FROM audit_records WHERE seq = 5`.execute(db);
    expect(await verifyChain(db, key)).toEqual({ ok: false, count: 4, brokenAt: { seq: 5, id: null } });
  });

  it('names a truncation: the newest records deleted and the head rewritten to an earlier record', async () => {
    const records = await appendFive();
    await sql`DELETE FROM audit_records WHERE seq > 3`.execute(db);
    const third = await sql<{ seal: string }>`SELECT seal FROM audit_records WHERE seq = 3`.execute(db);
    await sql`UPDATE audit_head SET seq = 3, seal = ${third.rows[0].seal} WHERE id = 1`.execute(db);
    expect(records).toHaveLength(5);
    expect(await verifyChain(db, key)).toEqual({
      ok: false,
      count: 3,
      brokenAt: { seq: 4, id: null },
      truncated: true,
    });
  });

  it('an earlier head replayed whole verifies by the key alone, but not against the logged anchor', async () => {
    await appendFive();
    const logged = await sql<{
      seq: unknown;
      seal: string;
    }>`SELECT seq, seal FROM audit_head WHERE id = 1`.execute(db);
    const anchor = { seq: Number(logged.rows[0].seq), seal: logged.rows[0].seal };
    expect(await verifyChain(db, key, anchor)).toEqual({ ok: true, count: 5 });
    // The database restored to when record 3 was the newest: its head, own seal included, is one
    // the key really sealed then (a backup holds exactly this), and the records after it are gone.
    await sql`DELETE FROM audit_records WHERE seq > 3`.execute(db);
    const third = await sql<{ seal: string }>`SELECT seal FROM audit_records WHERE seq = 3`.execute(db);
    await sql`UPDATE audit_head SET seq = 3, seal = ${third.rows[0].seal}, head_seal = ${computeHeadSeal(key, 3, third.rows[0].seal)} WHERE id = 1`.execute(
      db,
    );
    expect(await verifyChain(db, key)).toEqual({ ok: true, count: 3 });
    expect(await verifyChain(db, key, anchor)).toEqual({ ok: false, count: 3, behindAnchor: anchor });
    // An anchor at a record that exists but with another seal is not reached either.
    const forged = { seq: 3, seal: anchor.seal };
    expect(await verifyChain(db, key, forged)).toEqual({ ok: false, count: 3, behindAnchor: forged });
    expect(await verifyChain(db, key, { seq: 3, seal: third.rows[0].seal })).toEqual({ ok: true, count: 3 });
  });

  it('parses an anchor as SEQ:SEAL and nothing else', () => {
    const seal = 'a'.repeat(64);
    expect(parseAnchor(`12:${seal}`)).toEqual({ seq: 12, seal });
    for (const bad of [
      '',
      '12',
      `0:${seal}`,
      `-1:${seal}`,
      `12:${seal}0`,
      `12:${'A'.repeat(64)}`,
      `1e3:${seal}`,
      ` 12:${seal}`,
      `99999999999999999:${seal}`,
    ]) {
      expect(parseAnchor(bad), bad).toBeNull();
    }
  });

  it('logs the head it would verify against, for an anchor outside the database', async () => {
    await appendFive();
    const lines: object[] = [];
    await logAuditHead(db, { info: (details) => lines.push(details) });
    const head = await sql<{ seal: string; head_seal: string }>`
      SELECT seal, head_seal FROM audit_head WHERE id = 1`.execute(db);
    expect(lines).toEqual([
      {
        auditHead: {
          seq: 5,
          seal: head.rows[0].seal,
          headSeal: head.rows[0].head_seal,
          anchor: `5:${head.rows[0].seal}`,
        },
      },
    ]);
    expect(head.rows[0].head_seal).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a renumbered record breaks the chain', async () => {
    await appendFive();
    await sql`DELETE FROM audit_records WHERE seq = 5`.execute(db);
    await sql`UPDATE audit_records SET seq = 5 WHERE seq = 4`.execute(db);
    expect(await verifyChain(db, key)).toMatchObject({ ok: false, count: 3, brokenAt: { seq: 5 } });
  });

  it('another key does not verify the chain', async () => {
    await appendFive();
    const other = deriveKey(randomBytes(32), 'audit-seal');
    expect(await verifyChain(db, other)).toMatchObject({ ok: false, count: 0, brokenAt: { seq: 1 } });
  });

  it('a rolled-back transaction leaves no record and no gap', async () => {
    await appendOne(db, log, event(1));
    await expect(
      db.transaction().execute(async (trx) => {
        await log.append(trx, event(2));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await seqs(db)).toEqual([1]);
    expect((await appendOne(db, log, event(3))).seq).toBe(2);
    expect(await verifyChain(db, key)).toEqual({ ok: true, count: 2 });
  });

  it('20 concurrent appends in separate transactions make seqs 1..20', async () => {
    await concurrentAppends(db);
  });
});

const testDatabaseUrl = process.env.TEST_DATABASE_URL;

// Runs in CI's PostgreSQL-server pass (TEST_DATABASE_URL set); the embedded pass above already
// covers the chain itself, and PGlite cannot interleave transactions to race the head row.
describe.skipIf(!testDatabaseUrl)('sealed audit chain (PostgreSQL)', () => {
  const schema = `audit_test_${randomBytes(6).toString('hex')}`;
  let database: Database;
  let dataDir: string;

  async function admin(text: string) {
    const client = new pg.Client({ connectionString: testDatabaseUrl });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'audit-test-'));
    await admin(`CREATE SCHEMA ${schema}`);
    database = await openDatabase({ url: testDatabaseUrl, dataDir, schema, poolSize: 10 });
    await migrate(database.db);
  });

  afterAll(async () => {
    await database?.close();
    await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('20 concurrent appends in separate transactions make seqs 1..20', async () => {
    expect(database.kind).toBe('postgres');
    await concurrentAppends(database.db);
  });

  it('names a tampered record', async () => {
    await sql`UPDATE audit_records SET outcome = 'failure' WHERE seq = 7`.execute(database.db);
    expect(await verifyChain(database.db, key)).toMatchObject({ ok: false, count: 6, brokenAt: { seq: 7 } });
  });
});
