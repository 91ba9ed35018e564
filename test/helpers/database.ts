import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { type Database, openDatabase } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrator.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
/** The PostgreSQL server for tests that need one whatever the pass (races, two instances). */
export const SERVER_URL = TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  database: Database;
  /** postgres URL + schema when on the server; undefined on PGlite. */
  url?: string;
  schema?: string;
  drop(): Promise<void>;
}

/** One statement on its own connection (CREATE/DROP DATABASE or SCHEMA): tests, bench and scripts. */
export async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** A fresh schema on the server (own rows, own migrations), so test files never see each other. */
export async function createServerSchema(
  url = SERVER_URL,
): Promise<{ schema: string; drop(): Promise<void> }> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(url, `CREATE SCHEMA ${schema}`);
  return { schema, drop: () => adminQuery(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}

let snapshot: Promise<Blob> | undefined;

/**
 * What the migrated snapshot leaves out of initdb's cluster, to halve what loading it costs (about
 * 0.6 s of CPU for every test database, 0.3 s without these): the two template databases, which
 * only CREATE DATABASE reads and PGlite never runs, and 128 MB of shared buffers for a database
 * of a few megabytes. Neither changes what a query sees.
 */
const LEAN_SNAPSHOT = [
  "UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')",
  'DROP DATABASE template0',
  'DROP DATABASE template1',
  "ALTER SYSTEM SET shared_buffers = '16MB'",
  'CHECKPOINT',
];

/**
 * One migrated embedded database as a snapshot every PGlite test database starts from: creating an
 * empty cluster costs seconds, loading a snapshot a fraction of that. Kept on disk, named by the
 * migrations' and PGlite's versions, so every test file (each its own process) shares it; written
 * to a temporary name and renamed, so two processes making it at once never read half of one.
 */
function migratedSnapshot(): Promise<Blob> {
  snapshot ??= (async () => {
    const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
    const dir = join(root, 'migrations');
    // The installed PGlite's own manifest: another version may not read this snapshot.
    const hash = createHash('sha256').update(
      readFileSync(join(root, 'node_modules/@electric-sql/pglite/package.json')),
    );
    hash.update(LEAN_SNAPSHOT.join(';'));
    for (const name of readdirSync(dir).sort()) hash.update(name).update(readFileSync(join(dir, name)));
    const path = join(tmpdir(), `idsvc-pglite-${hash.digest('hex').slice(0, 16)}.tar`);
    if (existsSync(path)) return new Blob([readFileSync(path)]);
    const template = await openDatabase({ url: 'memory://', dataDir: '' });
    await migrate(template.db);
    for (const statement of LEAN_SNAPSHOT) await sql.raw(statement).execute(template.db);
    const blob = await (template.snapshot as () => Promise<Blob>)();
    await template.close();
    const partial = `${path}.${process.pid}`;
    writeFileSync(partial, Buffer.from(await blob.arrayBuffer()));
    renameSync(partial, path);
    return blob;
  })();
  return snapshot;
}

let emptySnapshot: Promise<Blob> | undefined;

/**
 * A fresh embedded cluster with nothing migrated, for tests of the migrator itself: the same
 * cluster `openDatabase({ url: 'memory://' })` makes, loaded from one snapshot taken once per
 * process (PGlite's initdb costs seconds of CPU each time, loading a snapshot a fraction of it).
 */
export async function createEmptyDatabase(): Promise<Database> {
  emptySnapshot ??= (async () => {
    const empty = await openDatabase({ url: 'memory://', dataDir: '' });
    const blob = await (empty.snapshot as () => Promise<Blob>)();
    await empty.close();
    return blob;
  })();
  return openDatabase({ url: 'memory://', dataDir: '', snapshot: await emptySnapshot });
}

/**
 * Writes the migrated snapshot as the embedded database on disk under DATA_DIR (where the service
 * opens it when DATABASE_URL is unset), for tests of a child process whose subject is not the
 * creation of the cluster: the child then opens a migrated cluster instead of running initdb.
 */
export async function seedDataDir(dataDir: string): Promise<void> {
  untar(Buffer.from(await (await migratedSnapshot()).arrayBuffer()), join(dataDir, 'pgdata'));
}

/**
 * Writes the files and directories of a POSIX (ustar) archive under `dir`: what PGlite's
 * `loadDataDir` does with the snapshot, without starting a PGlite (its WebAssembly start-up and
 * the write through its file system cost seconds of CPU per seeded directory on a busy machine).
 * The snapshot holds plain files and directories only; anything else is refused, not guessed at.
 */
function untar(archive: Buffer, dir: string): void {
  const text = (header: Buffer, from: number, length: number) =>
    header.toString('latin1', from, from + length).replace(/\0.*$/s, '');
  mkdirSync(dir, { recursive: true });
  let at = 0;
  while (at + 512 <= archive.length && archive[at] !== 0) {
    const header = archive.subarray(at, at + 512);
    const prefix = text(header, 345, 155);
    const name = `${prefix ? `${prefix}/` : ''}${text(header, 0, 100)}`.replace(/^\/+/, '');
    const size = Number.parseInt(text(header, 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(header[156]);
    const path = join(dir, name);
    if (!path.startsWith(dir)) throw new Error(`snapshot entry outside its directory: ${name}`);
    at += 512;
    if (type === '5') mkdirSync(path, { recursive: true });
    else if (type === '0' || type === '\0') {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, archive.subarray(at, at + size));
    } else throw new Error(`snapshot entry of type ${JSON.stringify(type)}: ${name}`);
    at += Math.ceil(size / 512) * 512;
  }
}

/**
 * PGlite in memory by default; the PostgreSQL server in a fresh schema when TEST_DATABASE_URL is
 * set or `server` is asked for.
 */
export async function createTestDatabase(
  opts: { server?: boolean; poolSize?: number } = {},
): Promise<TestDatabase> {
  const url = opts.server ? SERVER_URL : TEST_DATABASE_URL;
  if (!url) {
    const database = await openDatabase({
      url: 'memory://',
      dataDir: '',
      snapshot: await migratedSnapshot(),
    });
    // Nothing is pending in the snapshot: this checks the checksums and applies nothing.
    await migrate(database.db);
    return { database, drop: () => database.close() };
  }
  const { schema, drop } = await createServerSchema(url);
  const database = await openDatabase({ url, dataDir: '', schema, poolSize: opts.poolSize ?? 10 });
  await migrate(database.db);
  return {
    database,
    url,
    schema,
    async drop() {
      await database.close();
      await drop();
    },
  };
}
