import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Db } from './database.js';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../../migrations');

// Any fixed 64-bit number: every instance contends on the same advisory lock.
const MIGRATION_LOCK = 727_011_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: Number(f.slice(0, 4)),
      name: f.replace(/\.sql$/, ''),
      sql: readFileSync(join(dir, f), 'utf8'),
    }));
}

/**
 * Applies pending migrations in one transaction under a transaction-scoped advisory lock, so two
 * instances starting on one empty database apply each migration exactly once: the second waits
 * for the first to commit, then finds nothing left to do.
 */
export async function migrate(db: Db, migrations = readMigrations()): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql
      .raw(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`)
      .execute(trx);
    const done = await sql<{ version: number }>`SELECT version FROM schema_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => Number(r.version)));
    const ran: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      await sql.raw(m.sql).execute(trx);
      await sql`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, ${m.name})`.execute(trx);
      ran.push(m.name);
    }
    return ran;
  });
}
