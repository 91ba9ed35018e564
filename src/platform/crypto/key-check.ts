import { createHmac, timingSafeEqual } from 'node:crypto';
import { computeHeadSeal } from '../audit/audit.js';
import { readHead } from '../audit/repository.js';
import type { Clock } from '../clock.js';
import { ConfigError } from '../config-error.js';
import type { Db } from '../db/database.js';
import type { PurposeKeys } from './keys.js';
import { insertKeyCheck, readKeyCheck } from './repository.js';

/** Fixed and versioned: the value stored is HMAC(deriveKey(SECRETS_KEY, 'key-check'), LABEL). */
const LABEL = 'identity-service key check v1';

export function keyCheckOf(keys: PurposeKeys): string {
  return createHmac('sha256', keys.keyCheck).update(LABEL).digest('base64url');
}

const wrongKey = () =>
  new ConfigError(
    'SECRETS_KEY',
    'is not the key this database was first started with (its stored key check does not match); rotation is not supported yet',
  );

/**
 * Stops start-up when SECRETS_KEY is not the key the database's sealed data was made with, whatever
 * else is configured (with ACCESS_TOKEN_SIGNING_KEY set nothing sealed is opened at start-up, so
 * without this check a wrong key would run and seal new audit records the chain cannot verify).
 *
 * The first start stores the check. A database upgraded from before the check holds sealed data
 * already: its audit head carries HMAC(audit key, head), so the key is tried on that first and the
 * check is stored only when it opens. Two instances starting at once under different keys race on
 * one row (ON CONFLICT DO NOTHING); both then compare against the row that won.
 */
export async function checkSecretsKey(db: Db, keys: PurposeKeys, clock: Clock): Promise<void> {
  const expected = keyCheckOf(keys);
  let stored = await readKeyCheck(db);
  if (stored === undefined) {
    const head = await readHead(db);
    if (head && head.headSeal !== '') {
      if (!same(head.headSeal, computeHeadSeal(keys.auditSeal, Number(head.seq), head.seal)))
        throw wrongKey();
    }
    await insertKeyCheck(db, expected, clock.now());
    stored = await readKeyCheck(db);
    if (stored === undefined) throw new Error('key_checks: no row after inserting one');
  }
  if (!same(stored, expected)) throw wrongKey();
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
