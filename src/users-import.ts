// npm run users:import -- FILE.ndjson [--update] [--dry-run] [--restart] [--errors PATH]
//   [--firebase-signer-key B64 --firebase-salt-separator B64 --firebase-rounds N --firebase-mem-cost N]
// Imports identities from NDJSON (docs/import.md): refused lines to FILE.errors.ndjson, progress on
// stderr, resumable from FILE.checkpoint. Exit 0 when every line went in (or was there already),
// 1 on bad arguments or configuration, 2 when some lines were refused.
import { parseArgs } from 'node:util';
import { fail, readConfig, withDatabase } from './entry.js';
import { EventLog } from './features/events/log.js';
import { importFile } from './features/imports/file.js';
import { ImportService } from './features/imports/service.js';
import { AuditLog } from './platform/audit/audit.js';
import { systemClock } from './platform/clock.js';
import { createPasswordHasher } from './platform/crypto/passwords.js';
import { Sealer } from './platform/crypto/seal.js';

const USAGE =
  'usage: npm run users:import -- FILE.ndjson [--update] [--dry-run] [--restart] [--errors PATH] [--batch N] [--firebase-signer-key B64 --firebase-salt-separator B64 --firebase-rounds N --firebase-mem-cost N]';

async function main(): Promise<number> {
  let parsed: ReturnType<typeof args>;
  try {
    parsed = args();
  } catch {
    fail(USAGE);
  }
  const { values, positionals } = parsed;
  const path = positionals[0];
  if (positionals.length !== 1 || !path) fail(USAGE);
  const fb = [
    values['firebase-signer-key'],
    values['firebase-salt-separator'],
    values['firebase-rounds'],
    values['firebase-mem-cost'],
  ];
  if (fb.some((v) => v !== undefined) && fb.some((v) => v === undefined)) {
    fail("the four --firebase-* settings go together (the project's password hash parameters)");
  }
  const batchSize = values.batch === undefined ? 500 : Number(values.batch);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 5000)
    fail('--batch must be an integer from 1 to 5000');
  const config = readConfig();
  return withDatabase(config, async (database) => {
    const clock = systemClock;
    const service = new ImportService({
      database,
      clock,
      audit: new AuditLog(config.keys.auditSeal, clock),
      events: new EventLog(clock),
      sealer: new Sealer(config.keys.sealing),
      passwords: createPasswordHasher({ memoryKiB: config.argon2MemoryKiB, weakHashes: config.weakHashes }),
      weakHashes: config.weakHashes,
    });
    const counts = await importFile(service, {
      path,
      errorsPath: values.errors ?? `${path}.errors.ndjson`,
      checkpointPath: `${path}.checkpoint`,
      restart: values.restart ?? false,
      progress: process.stderr,
      options: {
        actor: 'cli',
        update: values.update ?? false,
        dryRun: values['dry-run'] ?? false,
        batchSize,
        ...(fb[0] !== undefined
          ? {
              firebase: {
                signerKey: fb[0],
                saltSeparator: fb[1]!,
                rounds: Number(fb[2]),
                memCost: Number(fb[3]),
              },
            }
          : {}),
      },
    });
    if (counts.afterLine > 0) console.log(`resumed after line ${counts.afterLine} (the checkpoint)`);
    console.log(
      `${values['dry-run'] ? 'dry run, nothing written: ' : ''}${counts.imported} imported, ${counts.updated} updated, ${counts.skipped} already there, ${counts.refused} refused${counts.refused > 0 ? ` (see ${values.errors ?? `${path}.errors.ndjson`})` : ''}`,
    );
    return counts.refused > 0 ? 2 : 0;
  });
}

function args() {
  return parseArgs({
    allowPositionals: true,
    strict: true,
    options: {
      update: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      restart: { type: 'boolean' },
      errors: { type: 'string' },
      batch: { type: 'string' },
      'firebase-signer-key': { type: 'string' },
      'firebase-salt-separator': { type: 'string' },
      'firebase-rounds': { type: 'string' },
      'firebase-mem-cost': { type: 'string' },
    },
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
