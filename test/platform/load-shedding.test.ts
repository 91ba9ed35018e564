import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { emailForm, PASSWORD, signUp, uniqueEmail } from '../registration/helpers.js';

// Past the Argon2id queue's bound a sign-up is answered 503 at once, with Retry-After, and writes
// nothing (ARGON2_MAX_WAIT_MS); below it every sign-up is served.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    env: { ARGON2_MEMORY_KIB: '19456', ARGON2_CONCURRENCY: '1', ARGON2_MAX_WAIT_MS: '100' },
  });
});
afterAll(async () => {
  await t.close();
});

describe('Argon2id load shedding', () => {
  it('answers a burst past the bound with 503 service.unavailable and leaves no trace of the shed ones', async () => {
    // One sign-up at rest measures the pace.
    expect((await signUp(t.app, { ...emailForm(uniqueEmail('pace')), password: PASSWORD })).statusCode).toBe(
      201,
    );
    const addresses = Array.from({ length: 20 }, (_, i) => uniqueEmail(`burst-${i}`));
    const answers = await Promise.all(
      addresses.map((a) => signUp(t.app, { ...emailForm(a), password: PASSWORD })),
    );
    const shed = addresses.filter((_, i) => answers[i].statusCode === 503);
    expect(shed.length).toBeGreaterThan(0);
    expect(answers.filter((r) => r.statusCode === 201).length).toBeGreaterThan(0);
    for (const r of answers.filter((r) => r.statusCode === 503)) {
      expect(r.json().code).toBe('service.unavailable');
      expect(r.json().retryable).toBe(true);
      expect(r.headers['retry-after']).toBe('1');
    }
    const written = await sql<{ value: string }>`
      SELECT value FROM identifiers WHERE value = ANY(${shed})`.execute(t.ctx.database.db);
    expect(written.rows).toEqual([]);
    // At rest again, a sign-up is served.
    expect((await signUp(t.app, { ...emailForm(uniqueEmail('after')), password: PASSWORD })).statusCode).toBe(
      201,
    );
  });
});
