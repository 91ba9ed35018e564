import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './database.js';
import { appliedMigrations, applyMigration, lockMigrations, recordChecksum } from './repository.js';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../../migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The database and the migration files disagree; start-up prints the message alone and exits 1. */
export class MigrationError extends Error {}

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

export function checksumOf(m: Migration): string {
  return createHash('sha256').update(m.sql).digest('hex');
}

/**
 * Applies pending migrations in one transaction under a transaction-scoped advisory lock, so two
 * instances starting on one empty database apply each migration exactly once: the second waits
 * for the first to commit, then finds nothing left to do.
 *
 * Forward only, in order, and never rewritten: an applied migration whose file is missing or whose
 * text changed (SHA-256 checksum) refuses, and so does a pending file numbered below the highest
 * applied version, which would run out of order on existing databases. A row applied before
 * checksums were recorded takes the current file's checksum once (trust on first use).
 */
export async function migrate(db: Db, migrations = readMigrations()): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await lockMigrations(trx);
    const applied = await appliedMigrations(trx);
    const files = new Map(migrations.map((m) => [m.version, m]));
    for (const row of applied) {
      const file = files.get(row.version);
      if (!file) {
        throw new MigrationError(`migration ${row.name} is applied but its file is missing from migrations/`);
      }
      const checksum = checksumOf(file);
      if (row.checksum === null) await recordChecksum(trx, row.version, checksum);
      else if (row.checksum !== checksum) {
        throw new MigrationError(`migration ${file.name} was edited after it was applied (checksum differs)`);
      }
    }
    const done = new Set(applied.map((r) => r.version));
    const highest = applied.reduce((max, r) => Math.max(max, r.version), 0);
    const pending = migrations.filter((m) => !done.has(m.version));
    const early = pending.find((m) => m.version < highest);
    if (early) {
      throw new MigrationError(
        `migration ${early.name} is numbered below the highest applied version ${highest}: give it a number above`,
      );
    }
    for (const m of pending) await applyMigration(trx, m, checksumOf(m));
    return pending.map((m) => m.name);
  });
}
