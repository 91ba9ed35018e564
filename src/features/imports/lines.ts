/**
 * A line of an import file longer than the cap: its bytes were dropped as they arrived, never held,
 * so the runner refuses it by its number and goes on with the next line.
 */
export class LineTooLong {
  constructor(readonly maxBytes: number) {}
}

/** What the splitter reports to a test: the most bytes it ever held of an unfinished line. */
export interface SplitStats {
  maxHeld: number;
}

/**
 * Splits a byte stream into lines (LF or CRLF) as it is pulled, holding at most `maxBytes` of the
 * current line: as soon as a line passes `maxBytes` without a newline, what was held is dropped, a
 * LineTooLong takes the line's place at once (before the rest of it arrives), and the rest is
 * skipped as it arrives. node:readline, by contrast, holds a line whole before anyone can look at its length, so
 * one enormous line without a newline would sit in memory (docs/import.md, "Running it").
 * Used by `npm run users:import` and by the streamed upload of POST /admin/v1/imports.
 */
export async function* splitLines(
  input: AsyncIterable<Buffer | string>,
  maxBytes: number,
  stats?: SplitStats,
): AsyncGenerator<string | LineTooLong> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  let skipping = false;
  const take = (): string => {
    let line = Buffer.concat(held, heldBytes).toString('utf8');
    if (line.endsWith('\r')) line = line.slice(0, -1);
    held = [];
    heldBytes = 0;
    return line;
  };
  for await (const chunk of input) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    while (buf.length > 0) {
      const nl = buf.indexOf(0x0a);
      const piece = nl === -1 ? buf : buf.subarray(0, nl);
      if (!skipping) {
        if (heldBytes + piece.length > maxBytes) {
          // Over the cap: what was held is dropped and the line refused now, before its end arrives;
          // its remaining bytes are skipped up to the next newline.
          held = [];
          heldBytes = 0;
          skipping = true;
          yield new LineTooLong(maxBytes);
        } else {
          // Copied, so the held bytes never pin a whole large chunk.
          held.push(Buffer.from(piece));
          heldBytes += piece.length;
          if (stats) stats.maxHeld = Math.max(stats.maxHeld, heldBytes);
        }
      }
      if (nl === -1) break;
      if (skipping) skipping = false;
      else yield take();
      buf = buf.subarray(nl + 1);
    }
  }
  if (!skipping && heldBytes > 0) yield take();
}
