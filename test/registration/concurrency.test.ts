import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { TEST_DATABASE_URL } from '../helpers/database.js';
import {
  barrier,
  challengesOf,
  confirm,
  emailForm,
  identifierRow,
  lastCode,
  PASSWORD,
  signUp,
  uniqueEmail,
} from './helpers.js';

const ROUNDS = 4;

/** Starts every request at once: each waits on one gate, then they are all released together. */
async function together(n: number, request: (i: number) => Promise<LightMyRequestResponse>) {
  const { gate, open } = barrier();
  const pending = Array.from({ length: n }, (_, i) => gate.then(() => request(i)));
  open();
  return Promise.all(pending);
}

// The default database of the pass (PGlite, or the server when TEST_DATABASE_URL is set), and the
// PostgreSQL server whatever the pass: PGlite has one connection, so only the server really races.
const targets: Array<[string, boolean]> = [
  [TEST_DATABASE_URL ? 'the PostgreSQL server (TEST_DATABASE_URL)' : 'PGlite', false],
  ['the PostgreSQL server (forced)', true],
];

describe.each(targets)('registration races on %s', (_name, server) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ server });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('20 concurrent sign-ups for one new address: all 201, one identity, one identifier, 20 live challenges', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`race-${round}`);
      const answers = await together(20, () => signUp(t.app, { ...emailForm(address), password: PASSWORD }));
      expect(answers.map((r) => r.statusCode)).toEqual(Array(20).fill(201));
      // The clock does not move, so winner and losers answer exactly the same bytes.
      expect(new Set(answers.map((r) => r.body)).size).toBe(1);

      const identifiers = await identifierRow(t.db.database.db, address);
      expect(identifiers).toHaveLength(1);
      const owners = await sql<{ n: unknown }>`
        SELECT count(DISTINCT c.identity_id) AS n FROM challenges c
        WHERE c.identifier_id = ${identifiers[0].id}`.execute(t.db.database.db);
      expect(Number(owners.rows[0].n)).toBe(1);
      const challenges = await challengesOf(t.db.database.db, address);
      expect(challenges).toHaveLength(20);
      expect(challenges.every((c) => c.spent_at === null && c.revoked_at === null && c.attempts === 0)).toBe(
        true,
      );
    }
    // Every loser removed the identity it had created: one identity per address, none orphaned.
    const identities = await sql<{ n: unknown }>`SELECT count(*) AS n FROM identities`.execute(
      t.db.database.db,
    );
    const owned = await sql<{ n: unknown }>`
      SELECT count(DISTINCT identity_id) AS n FROM identifiers`.execute(t.db.database.db);
    expect(Number(identities.rows[0].n)).toBe(Number(owned.rows[0].n));
  });

  it('10 concurrent confirmations with the right code: exactly one 204, nine 422', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`confirm-race-${round}`);
      expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
      const code = lastCode(t.config.dataDir, address);
      const answers = await together(10, () =>
        confirm(t.app, { ...emailForm(address), password: PASSWORD, code }),
      );
      const statuses = answers.map((r) => r.statusCode).sort();
      expect(statuses).toEqual([204, ...Array(9).fill(422)]);
      for (const r of answers.filter((a) => a.statusCode === 422)) {
        expect(r.json().code).toBe('identity.verification_refused');
      }
      const [challenge] = await challengesOf(t.db.database.db, address);
      expect(challenge.spent_at).not.toBeNull();
      const verified = await sql<{ n: unknown }>`
        SELECT count(*) AS n FROM audit_records WHERE name = 'identity.identifier.verified'
          AND target = ${(await identifierRow(t.db.database.db, address))[0].identity_id}`.execute(
        t.db.database.db,
      );
      expect(Number(verified.rows[0].n)).toBe(1);
    }
  });
});
