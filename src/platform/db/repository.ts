import { sql } from 'kysely';
import type { Executor } from './database.js';

// Any fixed 64-bit number: every instance contends on the same advisory lock.
const MIGRATION_LOCK = 727_011_001;

export interface AppliedMigration {
  version: number;
  name: string;
  /** Null for a row applied before checksums were recorded. */
  checksum: string | null;
}

/**
 * Takes the migration lock for the transaction and makes sure the bookkeeping table exists (with
 * the checksum column, added to databases migrated before it existed).
 */
export async function lockMigrations(trx: Executor): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
  await sql
    .raw(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
    .execute(trx);
  await sql.raw('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text').execute(trx);
}

export async function appliedMigrations(trx: Executor): Promise<AppliedMigration[]> {
  const r = await sql<AppliedMigration>`
    SELECT version, name, checksum FROM schema_migrations ORDER BY version`.execute(trx);
  return r.rows.map((row) => ({ ...row, version: Number(row.version) }));
}

/** Runs one migration file (several statements, so the simple protocol) and records it. */
export async function applyMigration(
  trx: Executor,
  m: { version: number; name: string; sql: string },
  checksum: string,
): Promise<void> {
  await sql.raw(m.sql).execute(trx);
  await sql`
    INSERT INTO schema_migrations (version, name, checksum) VALUES (${m.version}, ${m.name}, ${checksum})`.execute(
    trx,
  );
}

export async function recordChecksum(trx: Executor, version: number, checksum: string): Promise<void> {
  await sql`UPDATE schema_migrations SET checksum = ${checksum} WHERE version = ${version}`.execute(trx);
}
