import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { post, settle } from './support.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

describe('POST /password-recoveries timing', () => {
  it('costs the same for a known and an unknown address (200 interleaved calls each)', async () => {
    const person = await createPerson(t.ctx);
    const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
    const timed = async (address: string) => {
      const started = process.hrtime.bigint();
      const res = await post(t.app, '/password-recoveries', { identifierType: 'email', identifier: address });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      expect(res.statusCode).toBe(201);
      return ms;
    };
    // Warm-up: first calls pay for compilation and connection set-up.
    for (let i = 0; i < 10; i++) {
      await timed(person.email);
      await timed(unknown);
    }
    const known: number[] = [];
    const stranger: number[] = [];
    for (let i = 0; i < 200; i++) {
      // Alternate which goes first, so neither always runs right after the other's delivery.
      if (i % 2 === 0) {
        known.push(await timed(person.email));
        stranger.push(await timed(unknown));
      } else {
        stranger.push(await timed(unknown));
        known.push(await timed(person.email));
      }
    }
    const difference = Math.abs(median(known) - median(stranger));
    expect(difference, `medians ${median(known)} ms vs ${median(stranger)} ms`).toBeLessThan(5);
    // The known address really was sent every code (10 warm-up + 200); the unknown one nothing.
    await waitForCode(t.config.dataDir, person.email, 210);
    await settle();
    expect(messagesTo(t.config.dataDir, person.email).length).toBe(210);
    expect(messagesTo(t.config.dataDir, unknown)).toEqual([]);
  }, 120_000);
});
