import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';

/**
 * Issue 7 item 5: POST /sign-ins must not tell an unknown account from a wrong password by its
 * answer time. Real Argon2id parameters (19 MiB, the production floor), so the dummy verify of
 * the unknown path costs what a real verify costs; PostgreSQL when TEST_DATABASE_URL is set,
 * PGlite otherwise.
 */

const CALLS = 200;
const WARM_UP = 10;
const MAX_MEDIAN_DIFFERENCE_MS = 5;

let t: TestApp;
let person: Person;

beforeAll(async () => {
  t = await createTestApp({
    env: { ARGON2_MEMORY_KIB: '19456', RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' },
  });
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

describe('POST /sign-ins timing', () => {
  it(`an unknown account and a wrong password cost the same (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(6).toString('hex')}@example.com`;
    const timed = async (identifier: string) => {
      const payload = {
        identifierType: 'email',
        identifier,
        password: `wrong password ${randomBytes(4).toString('hex')}`,
      };
      const started = process.hrtime.bigint();
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/sign-ins', payload });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('identity.sign_in_refused');
      return ms;
    };
    // Warm-up: the dummy hash is made on first use; JIT, statement plans and connections settle.
    for (let i = 0; i < WARM_UP; i++) {
      await timed(person.email);
      await timed(unknown);
    }
    const known: number[] = [];
    const stranger: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      // Alternate which goes first, so neither always follows the other.
      if (i % 2 === 0) {
        known.push(await timed(person.email));
        stranger.push(await timed(unknown));
      } else {
        stranger.push(await timed(unknown));
        known.push(await timed(person.email));
      }
    }
    const knownMedian = median(known);
    const unknownMedian = median(stranger);
    const backend = t.db.url ? 'PostgreSQL' : 'PGlite';
    const report = `${backend}: wrong password median ${knownMedian.toFixed(2)} ms, unknown account median ${unknownMedian.toFixed(2)} ms`;
    console.info(`[timing] ${report}`);
    // The measurement is meaningful only if a refusal really pays for an Argon2id verify.
    expect(Math.min(knownMedian, unknownMedian), report).toBeGreaterThan(3);
    expect(Math.abs(knownMedian - unknownMedian), report).toBeLessThan(MAX_MEDIAN_DIFFERENCE_MS);
  }, 180_000);
});
