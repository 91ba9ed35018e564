// npm run oidc:rotate-keys: makes a new RS256 and a new EdDSA signing key for the OpenID Provider
// and retires the old ones. Each instance signs with the new keys from its next start; the old
// keys stay published in /.well-known/jwks.json until the ID tokens they signed have expired.
import { readConfig, withDatabase } from './entry.js';
import { OidcService } from './features/oidc/service.js';
import { systemClock } from './platform/clock.js';
import { Sealer } from './platform/crypto/seal.js';

async function main(): Promise<number> {
  const config = readConfig();
  return withDatabase(config, async (database) => {
    const kids = await OidcService.rotateKeys({
      database,
      sealer: new Sealer(config.keys.sealing),
      clock: systemClock,
    });
    console.log(`new signing keys: ${kids.join(', ')}; restart every instance to sign with them`);
    return 0;
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
