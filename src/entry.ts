// What every entry point does before its own work (src/main.ts, src/serve.ts, src/migrate.ts,
// src/audit-verify.ts, src/oidc-rotate-keys.ts, src/admin-key.ts): read the configuration, stop
// with one line when it is refused, open and migrate the database.
//
// src/main.ts imports this before tracing hooks node:http and pg, so nothing here loads them at
// import: the database modules are imported when a database is opened.
import { type Config, ConfigError, loadConfig } from './config.js';
import { loadOrCreateDevKey } from './platform/crypto/keys.js';
import type { Database } from './platform/db/database.js';

/** One line on stderr, no stack (the operator needs the variable's name, not our internals), and exit. */
export function fail(message: string, code = 1): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

/** The configuration from the environment; a refusal is its one line and exit 1. */
export function readConfig(): Config {
  try {
    return loadConfig(process.env, { devSecretsKey: loadOrCreateDevKey });
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

/** Runs a start-up step that reads configuration: a ConfigError is its one line and exit 1. */
export async function exitOnConfigError<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

async function open(config: Config): Promise<{ database: Database; migrate(): Promise<string[]> }> {
  const { openDatabase } = await import('./platform/db/database.js');
  const { migrate } = await import('./platform/db/migrator.js');
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir });
  return { database, migrate: () => migrate(database.db) };
}

/** The database, opened and migrated, for a process that keeps it (the service). */
export async function openMigrated(config: Config): Promise<Database> {
  const { database, migrate } = await open(config);
  await migrate();
  return database;
}

/**
 * Opens the database, applies the pending migrations and runs `work` on it (with the names of the
 * migrations applied), closing the database after, whatever happens (a command).
 */
export async function withDatabase<T>(
  config: Config,
  work: (database: Database, applied: string[]) => Promise<T>,
): Promise<T> {
  const { database, migrate } = await open(config);
  try {
    return await work(database, await migrate());
  } finally {
    await database.close();
  }
}
