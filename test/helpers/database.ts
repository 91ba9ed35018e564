import { randomBytes } from 'node:crypto';
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

/**
 * PGlite in memory by default; the PostgreSQL server in a fresh schema when TEST_DATABASE_URL is
 * set or `server` is asked for.
 */
export async function createTestDatabase(
  opts: { server?: boolean; poolSize?: number } = {},
): Promise<TestDatabase> {
  const url = opts.server ? SERVER_URL : TEST_DATABASE_URL;
  if (!url) {
    const database = await openDatabase({ url: 'memory://', dataDir: '' });
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
