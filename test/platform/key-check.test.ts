import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { AuditLog } from '../../src/platform/audit/audit.js';
import { systemClock } from '../../src/platform/clock.js';
import { checkSecretsKey } from '../../src/platform/crypto/key-check.js';
import { purposeKeys } from '../../src/platform/crypto/keys.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// The key check of SECRETS_KEY (security round 3, finding 3), on the database in use (PGlite, or
// the server when TEST_DATABASE_URL is set). The whole start-up is run in secrets-key.test.ts.
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => t.drop());

const key = () => purposeKeys(randomBytes(32));

async function stored(): Promise<string[]> {
  const rows = await t.database.db.selectFrom('key_checks').select('key_check').execute();
  return rows.map((r) => r.key_check);
}

async function refusal(run: Promise<void>): Promise<ConfigError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('the stored key check of SECRETS_KEY', () => {
  it('is written at the first start, holds for the same key and refuses another, naming SECRETS_KEY', async () => {
    await t.database.db.deleteFrom('key_checks').execute();
    const a = key();
    await checkSecretsKey(t.database.db, a, systemClock);
    const first = await stored();
    expect(first).toHaveLength(1);
    // The value is an HMAC under a derived key, never the key or a plain hash of it.
    expect(first[0]).not.toContain(a.keyCheck.toString('base64url'));
    expect(first[0]).not.toContain(a.keyCheck.toString('hex'));

    await checkSecretsKey(t.database.db, a, systemClock);
    const err = await refusal(checkSecretsKey(t.database.db, key(), systemClock));
    expect(err.message).toMatch(/SECRETS_KEY is not the key this database was first started with/);
    expect(err.message).not.toContain('\n');
    expect(await stored()).toEqual(first);
  });

  it('on a database upgraded from before the check, tries the key on the audit head before storing it', async () => {
    await t.database.db.deleteFrom('key_checks').execute();
    const a = key();
    const audit = new AuditLog(a.auditSeal, systemClock);
    await t.database.db
      .transaction()
      .execute((trx) =>
        audit.append(trx, { name: 'test.key_check', actor: null, target: null, outcome: 'success' }),
      );

    const err = await refusal(checkSecretsKey(t.database.db, key(), systemClock));
    expect(err.message).toContain('SECRETS_KEY');
    expect(await stored()).toEqual([]);

    await checkSecretsKey(t.database.db, a, systemClock);
    expect(await stored()).toHaveLength(1);
  });

  it('two first starts under different keys at once: one key is stored, the other start is refused', async () => {
    await t.database.db.deleteFrom('key_checks').execute();
    // No audit head to try the keys on: a fresh database.
    await sql`UPDATE audit_head SET head_seal = '' WHERE id = 1`.execute(t.database.db);
    const results = await Promise.allSettled([
      checkSecretsKey(t.database.db, key(), systemClock),
      checkSecretsKey(t.database.db, key(), systemClock),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(ConfigError);
    expect(await stored()).toHaveLength(1);
  });
});
