import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordMethodId } from '../../src/features/sign-in-methods/password-method.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate, elevated } from '../helpers/elevation.js';
import { createPerson, race, signIn } from '../helpers/identities.js';
import { waitForCode } from '../helpers/outbox.js';
import {
  addMethod,
  confirmMethod,
  identifierIdOf,
  insertVerifiedEmail,
  listMethods,
  removeMethod,
  uniqueEmail,
} from './support.js';

// Real PostgreSQL whatever the pass: the database, not the process, must decide these races.
let t: TestApp;
const ROUNDS = 10;

beforeAll(async () => {
  t = await createTestApp({ server: true });
});
afterAll(async () => {
  await t.close();
});

async function elevatedPerson() {
  const person = await createPerson(t.ctx);
  const grant = await signIn(t.app, person);
  const headers = elevated(grant.accessToken, await elevate(t, grant.accessToken, person.email));
  return { person, grant, headers };
}

describe('sign-in-method races on PostgreSQL', () => {
  it('two simultaneous confirmations with one code: exactly one consumes it', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, headers } = await elevatedPerson();
      const address = uniqueEmail('race');
      expect(
        (await addMethod(t.app, headers, { identifierType: 'email', identifier: address })).statusCode,
      ).toBe(201);
      const code = await waitForCode(t.config.dataDir, address, 1);
      const results = await race(2, () => confirmMethod(t.app, headers, code));
      expect(results.map((r) => r.statusCode).sort()).toEqual([204, 422]);
      const rows = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM identifiers
        WHERE identity_id = ${person.identityId} AND value = ${address}`.execute(t.ctx.database.db);
      expect(rows.rows[0].n).toBe(1);
      // The loser is at most one failure (a replay when it read after the winner's commit).
      const lock = await sql<{ failed_attempts: number }>`
        SELECT failed_attempts FROM identities WHERE id = ${person.identityId}`.execute(t.ctx.database.db);
      expect(lock.rows[0].failed_attempts).toBeLessThanOrEqual(1);
    }
  });

  it('two concurrent removals of different targets serialise and both succeed while a way in remains', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, headers } = await elevatedPerson();
      const a = await insertVerifiedEmail(t.ctx, person.identityId);
      const b = await insertVerifiedEmail(t.ctx, person.identityId);
      const results = await race(2, (i) => removeMethod(t.app, headers, i === 0 ? a.id : b.id));
      expect(results.map((r) => r.statusCode)).toEqual([204, 204]);
      // The caller stayed signed in through both epoch moves, and a way in is left.
      const left = await listMethods(t.app, grant.accessToken);
      expect(left.map((m) => m.kind).sort()).toEqual(['email', 'password']);
      await signIn(t.app, person);
    }
  });

  it('two concurrent removals that would together leave no way in: one is refused', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, headers } = await elevatedPerson();
      const spare = await insertVerifiedEmail(t.ctx, person.identityId);
      const primary = await identifierIdOf(t.ctx, person.email);
      const targets = [primary, spare.id];
      const results = await race(2, (i) => removeMethod(t.app, headers, targets[i]));
      expect(results.map((r) => r.statusCode).sort()).toEqual([204, 409]);
      const left = await listMethods(t.app, grant.accessToken);
      expect(left.map((m) => m.kind).sort()).toEqual(['email', 'password']);
      // Password and identifier raced against each other: same rule.
      const next = await elevatedPerson();
      const both = [await identifierIdOf(t.ctx, next.person.email), passwordMethodId(next.person.identityId)];
      const pair = await race(2, (i) => removeMethod(t.app, next.headers, both[i]));
      expect(pair.map((r) => r.statusCode).sort()).toEqual([409, 409]);
    }
  });
});
