import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { type Spawned, spawnTs, tryConnect, waitFor, within } from './support.js';

let running: Spawned | undefined;

afterEach(() => {
  if (running && running.child.exitCode === null && running.child.signalCode === null)
    running.child.kill('SIGKILL');
  running = undefined;
});

describe('a SECRETS_KEY that does not open the stored signing key', () => {
  it('stops start-up with one line naming SECRETS_KEY, never a stack trace', async () => {
    // One embedded database on disk, so the second start finds the key the first one sealed.
    const dataDir = mkdtempSync(join(tmpdir(), 'idsvc-secrets-'));
    const env = { NODE_ENV: 'development', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' };

    const port = await freePort();
    running = spawnTs('src/main.ts', {
      ...env,
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

    running = spawnTs('src/main.ts', {
      ...env,
      PORT: String(await freePort()),
      SECRETS_KEY: randomBytes(32).toString('base64'),
    });
    const { code } = await within(running.exited, 60_000, 'the second start to exit');
    const stderr = running.stderr();
    expect(code).toBe(1);
    expect(stderr.split('\n')).toHaveLength(2);
    expect(stderr).toContain('SECRETS_KEY');
    expect(stderr).toContain('signing keys');
    expect(stderr).not.toContain('    at ');
    expect(running.stdout()).not.toContain('listening');
  }, 150_000);
});
