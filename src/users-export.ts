// npm run users:export -- [--out FILE] [--totp-secrets]: every identity as NDJSON in the import's
// format (docs/import.md, "From this service"), to FILE or stdout. --totp-secrets decrypts the
// authenticator-app secrets into the file; without it no line carries one.
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { fail, readConfig, withDatabase } from './entry.js';
import { exportLines } from './features/imports/export.js';
import { Sealer } from './platform/crypto/seal.js';

const USAGE = 'usage: npm run users:export -- [--out FILE] [--totp-secrets]';

async function main(): Promise<number> {
  let values: { out?: string; 'totp-secrets'?: boolean };
  try {
    ({ values } = parseArgs({
      strict: true,
      options: { out: { type: 'string' }, 'totp-secrets': { type: 'boolean' } },
    }));
  } catch {
    fail(USAGE);
  }
  const config = readConfig();
  return withDatabase(config, async (database) => {
    const lines = exportLines(
      { database, sealer: new Sealer(config.keys.sealing) },
      { totpSecrets: values['totp-secrets'] ?? false },
    );
    // Owner-only: the file holds password hashes (and, asked for, second-factor secrets).
    const out = values.out ? createWriteStream(values.out, { mode: 0o600 }) : process.stdout;
    await pipeline(Readable.from(lines), out);
    return 0;
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
