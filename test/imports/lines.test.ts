import { describe, expect, it } from 'vitest';
import { LineTooLong, type SplitStats, splitLines } from '../../src/features/imports/lines.js';
import { MAX_LINE_BYTES } from '../../src/features/imports/service.js';

/**
 * The capped line splitter of the import (CLI and upload): lines cut at LF or CRLF across chunk
 * boundaries, a line over the cap replaced by a LineTooLong as soon as it passes the cap, and never
 * more than the cap plus one chunk held, however long the line without a newline.
 */

async function all(chunks: (string | Buffer)[], max = 8, stats?: SplitStats) {
  async function* from() {
    yield* chunks;
  }
  const out: (string | 'TOO LONG')[] = [];
  for await (const l of splitLines(from(), max, stats)) out.push(l instanceof LineTooLong ? 'TOO LONG' : l);
  return out;
}

describe('splitLines', () => {
  it('cuts lines across chunks, CRLF and LF, keeps empty lines and a last line without newline', async () => {
    expect(await all(['ab', 'c\r\nd', '\n\nef'])).toEqual(['abc', 'd', '', 'ef']);
    expect(await all(['abc\n'])).toEqual(['abc']);
  });

  it('keeps a multi-byte character cut between two chunks whole', async () => {
    const e = Buffer.from('é', 'utf8');
    expect(await all([Buffer.concat([Buffer.from('a'), e.subarray(0, 1)]), e.subarray(1), '\n'])).toEqual([
      'aé',
    ]);
  });

  it('replaces a line over the cap, in one chunk or many, and goes on with the next line', async () => {
    expect(await all(['12345678\n', '123456789\nok'])).toEqual(['12345678', 'TOO LONG', 'ok']);
    expect(await all(['1234', '5678', '9', '0000\nok\n'])).toEqual(['TOO LONG', 'ok']);
    expect(await all(['ok\n123456789'])).toEqual(['ok', 'TOO LONG']);
  });

  it('a 10 MB line without newline: refused before its end arrives, never more than the cap held', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const chunks = 160; // 10 MiB
    let sent = 0;
    let sentWhenRefused = -1;
    async function* source() {
      yield Buffer.from('{"first":1}\n');
      for (let i = 0; i < chunks; i++) {
        sent++;
        yield chunk;
      }
    }
    const stats: SplitStats = { maxHeld: 0 };
    const lines = splitLines(source(), MAX_LINE_BYTES, stats);
    expect((await lines.next()).value).toBe('{"first":1}');
    // Refused as soon as the line passes the cap: two chunks of 64 KiB in, not 160.
    const next = await lines.next();
    sentWhenRefused = sent;
    expect(next.value).toBeInstanceOf(LineTooLong);
    expect(sentWhenRefused).toBe(2);
    expect(stats.maxHeld).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(stats.maxHeld).toBeGreaterThan(0);
    expect((await lines.next()).done).toBe(true);
  });
});
