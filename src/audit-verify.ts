import { parseArgs } from 'node:util';
import { readConfig, withDatabase } from './entry.js';
import { type AuditAnchor, parseAnchor, verifyChain } from './platform/audit/audit.js';

const USAGE = 'usage: npm run audit:verify [-- --expect-head SEQ:SEAL]';

/** The anchor asked for, null when none, or a one-line refusal of the arguments. */
function anchorArgument(): AuditAnchor | null | string {
  let values: { 'expect-head'?: string };
  try {
    ({ values } = parseArgs({ options: { 'expect-head': { type: 'string' } }, strict: true }));
  } catch {
    return USAGE;
  }
  const text = values['expect-head'];
  if (text === undefined) return null;
  return (
    parseAnchor(text) ?? `--expect-head must be SEQ:SEAL, the anchor of an "audit head" log line (${USAGE})`
  );
}

/**
 * `npm run audit:verify [-- --expect-head SEQ:SEAL]`: exit 0 intact (and, with an anchor, reaching
 * it), 1 cannot check (bad arguments or configuration), 2 broken, truncated or behind the anchor.
 */
async function main(): Promise<number> {
  const anchor = anchorArgument();
  if (typeof anchor === 'string') {
    console.error(anchor);
    return 1;
  }
  const config = readConfig();
  return withDatabase(config, async (database) => {
    const result = await verifyChain(database.db, config.keys.auditSeal, anchor ?? undefined);
    if (result.ok) {
      const reaching = anchor ? `, reaching the anchor at ${anchor.seq}` : '';
      console.log(`audit chain intact: ${result.count} records${reaching}`);
      return 0;
    }
    if ('behindAnchor' in result) {
      console.log(
        `audit chain behind its anchor: no record ${result.behindAnchor.seq} with the logged seal (${result.count} records verify); the database was restored to an earlier state or rewritten`,
      );
      return 2;
    }
    const { seq, id } = result.brokenAt;
    if (result.truncated) {
      console.log(`audit chain truncated: records from ${seq} on were removed and the head rewritten`);
    } else {
      console.log(`audit chain broken at record ${seq} (${id ?? 'missing'})`);
    }
    return 2;
  });
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
