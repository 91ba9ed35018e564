import { ConfigError } from './config.js';
import { fail, readConfig, withDatabase } from './entry.js';

try {
  await withDatabase(readConfig(), async (_database, ran) => {
    process.stdout.write(ran.length ? `applied: ${ran.join(', ')}\n` : 'nothing to apply\n');
  });
} catch (err) {
  fail(err instanceof ConfigError ? err.message : `migration failed: ${(err as Error).message}`);
}
