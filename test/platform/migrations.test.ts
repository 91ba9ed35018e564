import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/platform/db/database.js';
import {
  checksumOf,
  type Migration,
  MigrationError,
  migrate,
  readMigrations,
} from '../../src/platform/db/migrator.js';
import { createEmptyDatabase, createServerSchema, SERVER_URL, seedDataDir } from '../helpers/database.js';
import { spawnTs, within } from './support.js';

const ALL = readMigrations();

describe('migrations on the PostgreSQL server', () => {
  let schema: string;
  let dropSchema: () => Promise<void>;
  let a: Database;
  let b: Database;

  beforeAll(async () => {
    ({ schema, drop: dropSchema } = await createServerSchema());
    a = await openDatabase({ url: SERVER_URL, dataDir: '', schema, poolSize: 2 });
    b = await openDatabase({ url: SERVER_URL, dataDir: '', schema, poolSize: 2 });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropSchema?.();
  });

  it('two instances migrating one empty database at once apply each migration exactly once', async () => {
    expect(ALL.length).toBeGreaterThan(0);
    const [ranA, ranB] = await Promise.all([migrate(a.db), migrate(b.db)]);
    // One instance did all the work; the other waited and found nothing left.
    const ran = [...ranA, ...ranB].sort();
    expect(ran).toEqual(ALL.map((m) => m.name).sort());
    expect([ranA.length, ranB.length].sort()).toEqual([0, ALL.length]);

    const rows = await sql<{ version: number; n: number }>`
      SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version
    `.execute(a.db);
    expect(rows.rows.map((r) => Number(r.version))).toEqual(ALL.map((m) => m.version));
    for (const r of rows.rows) expect(Number(r.n)).toBe(1);

    // The tables landed in the test's own schema.
    const where = await sql<{ schema: string }>`
      SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'schema_migrations'
        AND table_schema = ${schema}
    `.execute(a.db);
    expect(where.rows).toHaveLength(1);
  });

  it('a second migrate has nothing to apply', async () => {
    expect(await migrate(a.db)).toEqual([]);
    expect(await migrate(b.db)).toEqual([]);
    const count = await sql<{ n: number }>`SELECT count(*)::int AS n FROM schema_migrations`.execute(b.db);
    expect(Number(count.rows[0].n)).toBe(ALL.length);
  });
});

describe('migrations on embedded PGlite', () => {
  it('applies every migration once, then nothing', async () => {
    const db = await createEmptyDatabase();
    try {
      expect(await migrate(db.db)).toEqual(ALL.map((m) => m.name));
      expect(await migrate(db.db)).toEqual([]);
    } finally {
      await db.close();
    }
  });

  // Two child processes on an embedded cluster on disk, as below: slow on a busy machine.
  it('npm run migrate (src/migrate.ts) applies, then reports nothing to apply', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idsvc-migrate-'));
    const env = { NODE_ENV: 'development', DATA_DIR: dataDir };
    const first = spawnTs('src/migrate.ts', env);
    expect((await within(first.exited, 60_000, 'first migrate')).code).toBe(0);
    expect(first.stdout()).toContain('applied:');
    for (const m of ALL) expect(first.stdout()).toContain(m.name);
    const second = spawnTs('src/migrate.ts', env);
    expect((await within(second.exited, 60_000, 'second migrate')).code).toBe(0);
    expect(second.stdout().trim()).toBe('nothing to apply');
    expect(second.stderr()).toBe('');
  }, 150_000);

  it('npm run migrate refuses an invalid configuration with one line', async () => {
    const run = spawnTs('src/migrate.ts', {
      DATABASE_URL: 'mysql://x',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'm-')),
    });
    expect((await within(run.exited, 30_000, 'migrate')).code).toBe(1);
    expect(run.stderr().trim().split('\n')).toHaveLength(1);
    expect(run.stderr()).toContain('DATABASE_URL');
  });
});

describe('migration integrity (forward only, in order, never edited)', () => {
  const m = (version: number, table: string): Migration => ({
    version,
    name: `${String(version).padStart(4, '0')}_${table}`,
    sql: `CREATE TABLE ${table} (id integer PRIMARY KEY);`,
  });
  let db: Database;

  beforeEach(async () => {
    db = await createEmptyDatabase();
  });
  afterEach(async () => {
    await db.close();
  });

  async function tables(): Promise<string[]> {
    const r = await sql<{ name: string }>`
      SELECT table_name AS name FROM information_schema.tables
      WHERE table_name LIKE 't\\_%' ORDER BY table_name`.execute(db.db);
    return r.rows.map((row) => row.name);
  }

  it('records the SHA-256 of each applied file', async () => {
    await migrate(db.db, [m(1, 't_one')]);
    const r = await sql<{ checksum: string }>`SELECT checksum FROM schema_migrations`.execute(db.db);
    expect(r.rows).toEqual([{ checksum: checksumOf(m(1, 't_one')) }]);
    expect(checksumOf(m(1, 't_one'))).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a pending file numbered below the highest applied one, and applies nothing', async () => {
    await migrate(db.db, [m(1, 't_one'), m(3, 't_three')]);
    const late = [m(1, 't_one'), m(2, 't_two'), m(3, 't_three'), m(4, 't_four')];
    await expect(migrate(db.db, late)).rejects.toThrow(MigrationError);
    await expect(migrate(db.db, late)).rejects.toThrow(
      'migration 0002_t_two is numbered below the highest applied version 3',
    );
    expect(await tables()).toEqual(['t_one', 't_three']);
  });

  it('refuses an applied file whose text changed, naming it', async () => {
    await migrate(db.db, [m(1, 't_one')]);
    const edited = { ...m(1, 't_one'), sql: 'CREATE TABLE t_one (id bigint PRIMARY KEY);' };
    await expect(migrate(db.db, [edited, m(2, 't_two')])).rejects.toThrow(
      'migration 0001_t_one was edited after it was applied (checksum differs)',
    );
    expect(await tables()).toEqual(['t_one']);
  });

  it('refuses when an applied file is missing', async () => {
    await migrate(db.db, [m(1, 't_one'), m(2, 't_two')]);
    await expect(migrate(db.db, [m(1, 't_one')])).rejects.toThrow(
      'migration 0002_t_two is applied but its file is missing',
    );
  });

  it('gives a row applied before checksums existed the current checksum once, then holds it', async () => {
    await migrate(db.db, [m(1, 't_one')]);
    await sql`UPDATE schema_migrations SET checksum = NULL`.execute(db.db);
    expect(await migrate(db.db, [m(1, 't_one')])).toEqual([]);
    const r = await sql<{ checksum: string }>`SELECT checksum FROM schema_migrations`.execute(db.db);
    expect(r.rows).toEqual([{ checksum: checksumOf(m(1, 't_one')) }]);
    const edited = { ...m(1, 't_one'), sql: `${m(1, 't_one').sql}\n-- edited` };
    await expect(migrate(db.db, [edited])).rejects.toThrow(MigrationError);
  });

  // A child process opening an embedded cluster on disk: slow on a busy machine. The cluster is the
  // migrated snapshot written where the service opens it (npm run migrate's own run is tested above).
  it('start-up refuses an edited migration with one line and exit 1', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idsvc-edited-'));
    const env = { NODE_ENV: 'development', DATA_DIR: dataDir };
    await seedDataDir(dataDir);
    const pg = await openDatabase({ url: undefined, dataDir });
    try {
      await sql`UPDATE schema_migrations SET checksum = 'x' WHERE version = 1`.execute(pg.db);
    } finally {
      await pg.close();
    }
    const run = spawnTs('src/main.ts', { ...env, PORT: '0' });
    expect((await within(run.exited, 60_000, 'start-up')).code).toBe(1);
    expect(run.stderr().trim().split('\n')).toEqual([
      `cannot migrate the database: migration ${ALL[0].name} was edited after it was applied (checksum differs)`,
    ]);
  }, 150_000);
});
