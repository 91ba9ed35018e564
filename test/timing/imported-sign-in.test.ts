import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertHashProfile } from '../../src/features/identities/hash-profiles-repository.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { expectEqualTime, interleaved } from '../helpers/timing.js';

/**
 * Equal time with imported hashes (docs/decisions.md, "Imported password hashes"): once an import
 * has brought bcrypt hashes of cost 12 (several times Argon2id's 19 MiB verify), a wrong password on
 * an imported account, a wrong password on an Argon2id account and an unknown identifier answer in
 * the same time: every refusal is padded to the slowest profile the import recorded. Real costs,
 * the production Argon2id floor; PostgreSQL when TEST_DATABASE_URL is set, PGlite otherwise.
 */

const CALLS = 50;

let t: TestApp;
let argon: Person;
let imported: Person;

beforeAll(async () => {
  t = await createTestApp({
    env: { ARGON2_MEMORY_KIB: '19456', RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' },
  });
  argon = await createPerson(t.ctx);
  imported = await createPerson(t.ctx);
  const bcryptHash = bcrypt.hashSync(imported.password, 12);
  await sql`UPDATE identities SET password_hash = ${bcryptHash} WHERE id = ${imported.identityId}`.execute(
    t.ctx.database.db,
  );
  // What the import records when it meets the profile: a sample of a random password.
  const sample = await t.ctx.passwords.sampleLike(bcryptHash);
  await insertHashProfile(
    t.ctx.database.db,
    { profile: 'bcrypt:12', sampleHash: sample! },
    t.ctx.clock.now(),
  );
});
afterAll(async () => {
  await t.close();
});

const refused = (identifier: string) => async () => {
  const payload = {
    identifierType: 'email',
    identifier,
    password: `wrong password ${randomBytes(4).toString('hex')}`,
  };
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/sign-ins', payload });
  expect(res.statusCode).toBe(401);
  expect(res.json().code).toBe('identity.sign_in_refused');
};

describe('POST /sign-ins timing with imported bcrypt hashes', () => {
  it(`a bcrypt-12 account and an Argon2id account cost the same (${CALLS} interleaved calls each)`, async () => {
    const r = await interleaved(refused(imported.email), refused(argon.email), { calls: CALLS, warmUp: 6 });
    expectEqualTime(t, r, ['wrong password, bcrypt 12', 'wrong password, Argon2id'], 30);
  }, 240_000);

  it(`a bcrypt-12 account and an unknown identifier cost the same (${CALLS} interleaved calls each)`, async () => {
    const unknown = `nobody-${randomBytes(6).toString('hex')}@example.com`;
    const r = await interleaved(refused(imported.email), refused(unknown), { calls: CALLS, warmUp: 6 });
    expectEqualTime(t, r, ['wrong password, bcrypt 12', 'unknown account'], 30);
  }, 240_000);
});
