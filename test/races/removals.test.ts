import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { race, signIn } from '../helpers/identities.js';
import { context, sessionRow, sidOf } from '../sessions/support.js';
import {
  identifierIdOf,
  insertVerifiedEmail,
  LAST_METHOD,
  listMethods,
  removeMethod,
} from '../sign-in-methods/support.js';
import { expectRefusals, identityRow, ROUNDS, raceApp, statuses } from './support.js';

// Race 6 (interface 4.4): concurrent removals of different sign-in methods of one identity.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

async function removedAt(id: string): Promise<Date | null> {
  const r = await sql<{ removed_at: Date | null }>`
    SELECT removed_at FROM identifiers WHERE id = ${id}`.execute(t.ctx.database.db);
  return r.rows[0].removed_at;
}

describe('concurrent removals of different targets', () => {
  it(`two spare addresses at once: both 204, serialised, the epoch moved twice, a way in left (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, headers } = await elevatedPerson(t);
      const otherSession = await signIn(t.app, person);
      const a = await insertVerifiedEmail(t.ctx, person.identityId);
      const b = await insertVerifiedEmail(t.ctx, person.identityId);
      const before = (await identityRow(t, person.identityId)).session_epoch;

      const answers = await race(2, (i) => removeMethod(t.app, headers, i === 0 ? a.id : b.id));

      expect(
        answers.map((r) => r.statusCode),
        `round ${round}: ${answers.map((r) => r.body).join(' ')}`,
      ).toEqual([204, 204]);
      expect(await removedAt(a.id)).not.toBeNull();
      expect(await removedAt(b.id)).not.toBeNull();
      expect(await auditCount(t, 'identity.sign_in_method.removed', person.identityId)).toBe(2);

      // Each removal moved the epoch once, and the caller's session followed it both times.
      const epoch = (await identityRow(t, person.identityId)).session_epoch;
      expect(epoch).toBe(before + 2);
      const mine = await sessionRow(db, sidOf(grant.accessToken));
      expect(mine.epoch).toBe(epoch);
      expect(mine.revoked_at).toBeNull();
      expect((await context(t.app, grant.accessToken)).statusCode).toBe(200);
      // Every other session of the identity ended.
      const other = await sessionRow(db, sidOf(otherSession.accessToken));
      expect(other.revoked_reason).toBe('sign_in_method_removed');
      expectRefusals([await context(t.app, otherSession.accessToken)], 401, 'identity.session_required');

      // The original address and the password are left, and they still open a session.
      const left = await listMethods(t.app, grant.accessToken);
      expect(left.map((m) => m.kind).sort()).toEqual(['email', 'password']);
      expect((await context(t.app, (await signIn(t.app, person)).accessToken)).statusCode).toBe(200);
    }
  });

  it(`the only two addresses at once: one 204, one 409, one address and the password left (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, headers } = await elevatedPerson(t);
      const spare = await insertVerifiedEmail(t.ctx, person.identityId);
      const targets = [await identifierIdOf(t.ctx, person.email), spare.id];
      const before = (await identityRow(t, person.identityId)).session_epoch;

      const answers = await race(2, (i) => removeMethod(t.app, headers, targets[i]));

      expect(statuses(answers), `round ${round}`).toEqual([204, 409]);
      expect(answers.find((r) => r.statusCode === 409)!.json()).toEqual(LAST_METHOD);
      const removed = answers.findIndex((r) => r.statusCode === 204);
      expect(await removedAt(targets[removed])).not.toBeNull();
      expect(await removedAt(targets[1 - removed])).toBeNull();
      expect(await auditCount(t, 'identity.sign_in_method.removed', person.identityId)).toBe(1);
      // The refused removal moved nothing.
      const epoch = (await identityRow(t, person.identityId)).session_epoch;
      expect(epoch).toBe(before + 1);
      expect((await sessionRow(db, sidOf(grant.accessToken))).epoch).toBe(epoch);

      const left = await listMethods(t.app, grant.accessToken);
      expect(left.map((m) => m.kind).sort()).toEqual(['email', 'password']);
      const address = removed === 0 ? spare.address : person.email;
      await signIn(t.app, { email: address, password: person.password });
    }
  });
});
