import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { seedDataDir } from '../helpers/database.js';
import { freePort } from '../helpers/net.js';
import { type Spawned, spawnTs, tryConnect, waitFor, within } from './support.js';

let running: Spawned | undefined;

afterEach(() => {
  if (running && running.child.exitCode === null && running.child.signalCode === null)
    running.child.kill('SIGKILL');
  running = undefined;
});

const ENV = { NODE_ENV: 'development', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };

/**
 * A data directory a first start has stored its key check in, under a SECRETS_KEY of its own:
 * made once, and copied for each later start (an embedded database on disk, so the second start
 * finds what the first one stored). It starts as the migrated snapshot (nothing stored yet, no key
 * check), so the first start skips initdb.
 */
let stored: string;

beforeAll(async () => {
  stored = mkdtempSync(join(tmpdir(), 'idsvc-secrets-'));
  await seedDataDir(stored);
  const port = await freePort();
  running = spawnTs('src/main.ts', {
    ...ENV,
    DATA_DIR: stored,
    PORT: String(port),
    SECRETS_KEY: randomBytes(32).toString('base64'),
  });
  const first = running;
  await waitFor(
    async () => {
      if (first.child.exitCode !== null) throw new Error(`exited early: ${first.stderr()}`);
      return (await tryConnect(port)) === 'connected' ? true : undefined;
    },
    60_000,
    'the first start to listen',
    100,
  );
  first.child.kill('SIGTERM');
  expect((await within(first.exited, 20_000, 'the first start to stop')).code).toBe(0);
  running = undefined;
}, 90_000);

/** A start under another SECRETS_KEY, on a copy of what the first start stored. */
async function secondStart(extra: Record<string, string>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'idsvc-secrets-'));
  cpSync(stored, dataDir, { recursive: true });
  running = spawnTs('src/main.ts', {
    ...ENV,
    ...extra,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    SECRETS_KEY: randomBytes(32).toString('base64'),
  });
  const { code } = await within(running.exited, 60_000, 'the second start to exit');
  const stderr = running.stderr();
  expect(code).toBe(1);
  expect(stderr.split('\n')).toHaveLength(2);
  expect(stderr).toMatch(/^invalid configuration: SECRETS_KEY /);
  expect(stderr).toContain('key check');
  expect(stderr).not.toContain('    at ');
  expect(running.stdout()).not.toContain('listening');
}

describe('a SECRETS_KEY that is not the one the database was first started with', () => {
  it('stops start-up with one line naming SECRETS_KEY, never a stack trace', async () => {
    await secondStart({});
  }, 150_000);

  it('stops start-up too when ACCESS_TOKEN_SIGNING_KEY is set and nothing sealed is opened at start', async () => {
    // Security round 3, finding 3: this start used to run, answer 500 on confirmations and seal
    // new audit records under the wrong key.
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: 'configured' };
    await secondStart({ ACCESS_TOKEN_SIGNING_KEY: JSON.stringify(jwk) });
  }, 150_000);
});
