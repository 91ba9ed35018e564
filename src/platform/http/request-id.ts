import { randomFillSync } from 'node:crypto';

/** Random bytes for this many ids are drawn at once, as Node's own randomUUID does. */
const IDS_PER_DRAW = 256;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Where each of the 16 bytes' two hex digits go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

const pool = Buffer.alloc(16 * IDS_PER_DRAW);
let next = pool.length;
const text = Buffer.alloc(36, '-', 'latin1');

/**
 * A random (version 4) UUID, as `crypto.randomUUID()` makes, for the X-Request-Id every answer
 * carries. Node's builds the text from 20 pieces joined one by one, so every answer's id was a
 * string of pieces that Node flattens again when it checks the header and the access line when it
 * writes it; this one is written as bytes and read out as one flat string (half the time, measured
 * in docs/performance.md). From the same cryptographic source: an id is not a secret, but it must
 * not be guessable from the one before.
 */
export function requestId(): string {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  pool[next + 6] = (pool[next + 6] & 0x0f) | 0x40;
  pool[next + 8] = (pool[next + 8] & 0x3f) | 0x80;
  for (let i = 0; i < 16; i++) {
    const byte = pool[next + i];
    text[AT[i]] = HEX[byte >> 4];
    text[AT[i] + 1] = HEX[byte & 15];
  }
  next += 16;
  return text.toString('latin1', 0, 36);
}
