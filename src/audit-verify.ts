import { ConfigError, loadConfig } from './config.js';
import { verifyChain } from './platform/audit/audit.js';
import { deriveKey } from './platform/crypto/keys.js';
import { openDatabase } from './platform/db/database.js';
import { migrate } from './platform/db/migrator.js';

/** `npm run audit:verify`: exit 0 intact, 1 cannot check, 2 broken (names the first broken record). */
async function main(): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  }
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir });
  try {
    await migrate(database.db);
    const result = await verifyChain(database.db, deriveKey(config.secretsKey, 'audit-seal'));
    if (result.ok) {
      console.log(`audit chain intact: ${result.count} records`);
      return 0;
    }
    const { seq, id } = result.brokenAt;
    if (result.truncated) {
      console.log(`audit chain truncated: records from ${seq} on were removed and the head rewritten`);
    } else {
      console.log(`audit chain broken at record ${seq} (${id ?? 'missing'})`);
    }
    return 2;
  } finally {
    await database.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`audit verification failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
