// The service: configuration, database, migrations, the HTTP listener and graceful shutdown.
// Started by src/main.ts, after tracing when it is on.
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { loadOrCreateDevKey } from './platform/crypto/keys.js';
import { preparePasswordPolicy } from './platform/crypto/password-policy.js';
import { openDatabase } from './platform/db/database.js';
import { MigrationError, migrate } from './platform/db/migrator.js';
import { stopTracing } from './platform/trace/tracing.js';

function fail(message: string): never {
  // One line, no stack: the operator needs the variable's name, not our internals.
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig(process.env, { devSecretsKey: loadOrCreateDevKey });
} catch (err) {
  if (err instanceof ConfigError) fail(err.message);
  throw err;
}

let database: Awaited<ReturnType<typeof openDatabase>>;
try {
  database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir });
  await migrate(database.db);
} catch (err) {
  if (err instanceof MigrationError) fail(`cannot migrate the database: ${err.message}`);
  fail(`cannot open or migrate the database: ${(err as { code?: string }).code ?? (err as Error).name}`);
}

let app: Awaited<ReturnType<typeof buildApp>>['app'];
let admin: Awaited<ReturnType<typeof buildApp>>['admin'];
let flushLogs: () => void;
let drainLogs: () => Promise<void>;
try {
  ({ app, admin, flushLogs, drainLogs } = await buildApp({ config, database }));
} catch (err) {
  if (err instanceof ConfigError) fail(err.message);
  throw err;
}

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
