import type { LightMyRequestResponse } from 'fastify';
import { type RawBuilder, sql } from 'kysely';
import { expect } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { post } from '../second-factors/helpers.js';

/**
 * Every race of this suite is repeated this many times, each round on fresh subjects (a new
 * person, address, ticket, nonce...), so an ordering that only shows up now and then gets its turn.
 */
export const ROUNDS = 20;

/**
 * One app per file, always on the PostgreSQL server (PGlite has one connection and cannot race).
 * Argon2 is kept small, and the rate limits out of the way: hundreds of sign-ins and answers run
 * within a minute from one address, and a 429 would hide the outcome the test is about.
 */
export function raceApp(env: Record<string, string> = {}): Promise<TestApp> {
  return createTestApp({
    server: true,
    env: {
      ARGON2_MEMORY_KIB: '1024',
      RATE_LIMIT_SENDS_A_MESSAGE: '1000000/60',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '1000000/60',
      RATE_LIMIT_PROVES_A_PASSWORD: '1000000/60',
      ...env,
    },
  });
}

/** The single integer a `SELECT count(*)::int AS n ...` (or any `... AS n`) answers. */
export async function scalar(t: TestApp, query: RawBuilder<unknown>): Promise<number> {
  const r = await query.execute(t.ctx.database.db);
  return Number((r.rows[0] as { n: unknown }).n);
}

export async function identityRow(t: TestApp, identityId: string) {
  const r = await sql<{
    session_epoch: number;
    failed_attempts: number;
    locked_until: Date | null;
    password_hash: string | null;
  }>`
    SELECT session_epoch, failed_attempts, locked_until, password_hash FROM identities
    WHERE id = ${identityId}`.execute(t.ctx.database.db);
  if (r.rows.length !== 1) throw new Error(`no identity ${identityId}`);
  return r.rows[0];
}

/** Status codes in ascending order (the order the requests finished in is not the point). */
export function statuses(answers: LightMyRequestResponse[]): number[] {
  return answers.map((r) => r.statusCode).sort((a, b) => a - b);
}

/** `n` copies of `status`. */
export function times(n: number, status: number): number[] {
  return Array.from({ length: n }, () => status);
}

/** Every answer is the named Problem Details, and all of them are byte-identical. */
export function expectRefusals(answers: LightMyRequestResponse[], status: number, code: string): void {
  for (const r of answers) {
    expect({ status: r.statusCode, code: r.json().code }, r.body).toEqual({ status, code });
    expect(String(r.headers['content-type'])).toMatch(/^application\/problem\+json/);
  }
  if (answers.length > 0) expect(new Set(answers.map((r) => r.body)).size).toBe(1);
}

/** A fresh person, signed in, with a step-up started on the identifier channel (a code in flight). */
export async function identifierStepUp(
  t: TestApp,
): Promise<{ person: Person; token: string; challengeId: string }> {
  const person = await createPerson(t.ctx);
  const token = (await signIn(t.app, person)).accessToken;
  const start = await post(t.app, '/step-ups', { token, payload: { channel: 'identifier' } });
  expect(start.statusCode, start.body).toBe(201);
  return { person, token, challengeId: start.json().data.challengeId as string };
}
