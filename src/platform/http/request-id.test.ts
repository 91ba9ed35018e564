import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isOneByte } from '../../../test/helpers/strings.js';
import { requestId } from './request-id.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('requestId', () => {
  it('is a version 4 UUID in the form crypto.randomUUID() gives, never the same twice', () => {
    expect(randomUUID()).toMatch(V4);
    // More ids than one draw of random bytes holds, so the refill is crossed several times.
    const ids = Array.from({ length: 5000 }, () => requestId());
    for (const id of ids) expect(id).toMatch(V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('uses every hex digit in every free position (the bytes are random, not a counter)', () => {
    const ids = Array.from({ length: 2000 }, () => requestId());
    for (const at of [0, 7, 9, 15, 20, 35]) {
      expect(new Set(ids.map((id) => id[at])).size).toBe(16);
    }
    // The variant digit takes exactly its four values.
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(['8', '9', 'a', 'b']));
  });

  it('is one-byte text, and a new string each time (the buffer it is read from is reused)', () => {
    const first = requestId();
    const second = requestId();
    expect(isOneByte(first)).toBe(true);
    expect(first).not.toBe(second);
    expect(first).toMatch(V4);
  });
});
