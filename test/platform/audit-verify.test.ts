import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logAuditHead } from '../../src/platform/audit/anchor.js';
import { AuditLog, computeHeadSeal } from '../../src/platform/audit/audit.js';
import { systemClock } from '../../src/platform/clock.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { type Database, openDatabase } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrator.js';
import { createServerSchema, SERVER_URL } from '../helpers/database.js';

// The operator's command against a database restored to an earlier state (security round 3,
// finding 10). It runs in its own process, so it needs the PostgreSQL server on every pass (an
// in-memory PGlite is out of another process's reach).
const secretsKey = randomBytes(32);
const key = deriveKey(secretsKey, 'audit-seal');
let database: Database;
let schema: { schema: string; drop(): Promise<void> };

beforeAll(async () => {
  schema = await createServerSchema(SERVER_URL);
  database = await openDatabase({ url: SERVER_URL, dataDir: '', schema: schema.schema, poolSize: 2 });
  await migrate(database.db);
});
afterAll(async () => {
  await database.close();
  await schema.drop();
});

function verify(...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/audit-verify.ts', ...args], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: SERVER_URL,
      PGOPTIONS: `-c search_path=${schema.schema}`,
      SECRETS_KEY: secretsKey.toString('base64'),
    },
    encoding: 'utf8',
  });
  return { status: run.status, out: run.stdout, err: run.stderr };
}

/** The anchor exactly as the running service logs it. */
async function loggedAnchor(): Promise<string> {
  const lines: { auditHead?: { anchor: string } }[] = [];
  await logAuditHead(database.db, { info: (details) => lines.push(details) });
  return lines[0]!.auditHead!.anchor;
}

describe('npm run audit:verify -- --expect-head SEQ:SEAL', () => {
  it('fails a database rolled back whole to an earlier head, which the key alone accepts', async () => {
    const audit = new AuditLog(key, systemClock);
    for (let i = 0; i < 5; i++) {
      await database.db
        .transaction()
        .execute((trx) =>
          audit.append(trx, { name: 'test.anchor', actor: null, target: `t-${i}`, outcome: 'success' }),
        );
    }
    const anchor = await loggedAnchor();
    expect(anchor).toMatch(/^5:[0-9a-f]{64}$/);

    const reached = verify('--expect-head', anchor);
    expect(reached.status, reached.out + reached.err).toBe(0);
    expect(reached.out).toBe('audit chain intact: 5 records, reaching the anchor at 5\n');

    // The rollback: records 4 and 5 gone, the head as a backup taken after record 3 holds it.
    await sql`DELETE FROM audit_records WHERE seq > 3`.execute(database.db);
    const third = await sql<{ seal: string }>`SELECT seal FROM audit_records WHERE seq = 3`.execute(
      database.db,
    );
    const seal = third.rows[0]!.seal;
    await sql`UPDATE audit_head SET seq = 3, seal = ${seal}, head_seal = ${computeHeadSeal(key, 3, seal)} WHERE id = 1`.execute(
      database.db,
    );

    const plain = verify();
    expect(plain.status, plain.out + plain.err).toBe(0);
    const behind = verify('--expect-head', anchor);
    expect(behind.status, behind.out + behind.err).toBe(2);
    expect(behind.out).toMatch(
      /^audit chain behind its anchor: no record 5 with the logged seal \(3 records verify\)/,
    );
    expect(behind.out).not.toContain(anchor.split(':')[1]!);
  }, 120_000);

  it('refuses an argument that is not an anchor with one line and exit 1, touching nothing', () => {
    for (const args of [
      ['--expect-head', '5'],
      ['--expect-head', `5:${'z'.repeat(64)}`],
      ['--expect-heads', '1'],
      ['stray'],
    ]) {
      const run = verify(...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.out).toBe('');
      expect(run.err.trimEnd().split('\n'), run.err).toHaveLength(1);
      expect(run.err).toContain('--expect-head');
      expect(run.err).not.toContain('    at ');
    }
  }, 120_000);
});
