// The service: configuration, database, migrations, the HTTP listener and graceful shutdown.
// Started by src/main.ts, after tracing when it is on.
import { buildApp } from './app.js';
import { exitOnConfigError, fail, openMigrated, readConfig } from './entry.js';
import { preparePasswordPolicy } from './platform/crypto/password-policy.js';
import type { Database } from './platform/db/database.js';
import { MigrationError } from './platform/db/migrator.js';
import { stopTracing } from './platform/trace/tracing.js';

const config = readConfig();

let database: Database;
try {
  database = await openMigrated(config);
} catch (err) {
  if (err instanceof MigrationError) fail(`cannot migrate the database: ${err.message}`);
  fail(`cannot open or migrate the database: ${(err as { code?: string }).code ?? (err as Error).name}`);
}

const { app, admin, flushLogs, drainLogs } = await exitOnConfigError(() => buildApp({ config, database }));

// Log lines are buffered: a fatal error writes its line and everything before it, then exits.
function fatal(err: unknown, kind: string): never {
  app.log.fatal({ err }, kind);
  flushLogs();
  process.exit(1);
}
process.on('uncaughtException', (err) => fatal(err, 'uncaught exception'));
process.on('unhandledRejection', (err) => fatal(err, 'unhandled rejection'));

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  app.log.info({ signal }, 'shutting down: refusing new connections, finishing in-flight requests');
  const force = setTimeout(() => {
    app.log.error('shutdown timed out');
    flushLogs();
    process.exit(1);
  }, config.shutdownTimeoutMs);
  force.unref();
  // Fastify's close stops the listener, waits for in-flight requests, then runs onClose hooks; the
  // operators' listener closes first (a preClose hook of app).
  await app.close();
  await database.close();
  // The spans still buffered go to the collector before the process ends (tracing on only).
  await stopTracing();
  app.log.info('stopped');
  await drainLogs();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

// zxcvbn's dictionaries are built before the port opens, not on the first new password's request.
await preparePasswordPolicy();

// The handlers are in place before the port opens, so a SIGTERM at any moment after it is graceful.
try {
  await app.listen({ host: config.host, port: config.port });
} catch (err) {
  if (!stopping) {
    fail(`cannot listen on ${config.host}:${config.port}: ${(err as { code?: string }).code ?? 'error'}`);
  }
}

// The operators' listener (ADMIN_PORT), never on the public port.
if (admin) {
  try {
    await admin.listen({ host: config.admin.host, port: config.admin.port });
  } catch (err) {
    if (!stopping) {
      fail(
        `cannot listen on ${config.admin.host}:${config.admin.port} (ADMIN_PORT): ${(err as { code?: string }).code ?? 'error'}`,
      );
    }
  }
}
