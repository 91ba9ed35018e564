import { ConfigError, loadConfig } from './config.js';
import { loadOrCreateDevKey } from './platform/crypto/keys.js';
import { openDatabase } from './platform/db/database.js';
import { migrate } from './platform/db/migrator.js';

try {
  const config = loadConfig(process.env, { devSecretsKey: loadOrCreateDevKey });
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir });
  const ran = await migrate(database.db);
  process.stdout.write(ran.length ? `applied: ${ran.join(', ')}\n` : 'nothing to apply\n');
  await database.close();
} catch (err) {
  process.stderr.write(
    `${err instanceof ConfigError ? err.message : `migration failed: ${(err as Error).message}`}\n`,
  );
  process.exit(1);
}
