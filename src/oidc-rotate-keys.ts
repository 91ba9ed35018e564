// npm run oidc:rotate-keys: makes a new RS256 and a new EdDSA signing key for the OpenID Provider
// and retires the old ones. Each instance signs with the new keys from its next start; the old
// keys stay published in /.well-known/jwks.json until the ID tokens they signed have expired.
import { ConfigError, loadConfig } from './config.js';
import { OidcService } from './features/oidc/service.js';
import { systemClock } from './platform/clock.js';
import { loadOrCreateDevKey } from './platform/crypto/keys.js';
import { Sealer } from './platform/crypto/seal.js';
import { openDatabase } from './platform/db/database.js';
import { migrate } from './platform/db/migrator.js';

async function main(): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env, { devSecretsKey: loadOrCreateDevKey });
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
    const kids = await OidcService.rotateKeys({
      database,
      sealer: new Sealer(config.keys.sealing),
      clock: systemClock,
    });
    console.log(`new signing keys: ${kids.join(', ')}; restart every instance to sign with them`);
    return 0;
  } finally {
    await database.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
