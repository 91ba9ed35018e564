import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'log-drain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LOGGER = new URL('../../src/platform/log/logger.ts', import.meta.url).href;

/**
 * A process that logs a line, lets the batcher hand it to the destination (whose write then runs
 * on libuv's thread), logs a second line at once and drains: what its stdout, a file, holds.
 */
async function shutdownLines(run: number): Promise<string[]> {
  const script = `
    import { createLogger } from ${JSON.stringify(LOGGER)};
    const { logger, drain } = createLogger('info');
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    logger.info({ filler: 'x'.repeat(200000) }, 'first');
    await turn();
    await turn();
    logger.info('last');
    await drain();
    process.exit(0);
  `;
  const out = join(dir, `out-${run}.log`);
  const fd = openSync(out, 'w');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', fd, 'inherit'],
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { msg: string }).msg);
}

describe("the logger's drain at the end of a graceful shutdown", () => {
  it('writes every line, in order, behind a write still in flight', async () => {
    for (let run = 0; run < 4; run++) {
      expect(await shutdownLines(run)).toEqual(['first', 'last']);
    }
  });
});
