import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { createPerson, type Grant, race, signIn } from '../helpers/identities.js';
import { context, renew, sessionsOf, sidOf, signInRaw, signOutEverywhere } from '../sessions/support.js';
import { expectRefusals, identityRow, ROUNDS, raceApp } from './support.js';

// Race 7 (interface 3, 4.3): sign-out everywhere against sign-ins still committing.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

const SIGN_INS = 10;
const SIGN_OUTS = 5;

describe('sign-out everywhere racing sign-ins in flight', () => {
  it(`afterwards no session of an older epoch is accepted, and every newer one is (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    let deadOnArrival = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const person = await createPerson(t.ctx);
      const other = await createPerson(t.ctx);
      const otherGrant = await signIn(t.app, other);
      const existing: Grant[] = [];
      for (let i = 0; i < SIGN_OUTS; i++) existing.push(await signIn(t.app, person));
      const before = (await identityRow(t, person.identityId)).session_epoch;

      // Sign-ins and sign-outs interleaved in the start order; each sign-out uses its own session.
      const answers = await race(SIGN_INS + SIGN_OUTS, (i) =>
        i < SIGN_INS
          ? signInRaw(t.app, person.email, person.password)
          : signOutEverywhere(t.app, existing[i - SIGN_INS].accessToken),
      );
      const signIns = answers.slice(0, SIGN_INS);
      const signOuts = answers.slice(SIGN_INS);

      // Every sign-in answers 201, whether its session survives or not.
      for (const r of signIns) expect(r.statusCode, r.body).toBe(201);
      // A sign-out whose own session another one ended before its guard read is a plain 401.
      const succeeded = signOuts.filter((r) => r.statusCode === 204).length;
      expectRefusals(
        signOuts.filter((r) => r.statusCode !== 204),
        401,
        'identity.session_required',
      );
      expect(succeeded).toBeGreaterThanOrEqual(1);

      // Each successful sign-out moved the epoch exactly once and wrote exactly one audit record.
      const epoch = (await identityRow(t, person.identityId)).session_epoch;
      expect(epoch).toBe(before + succeeded);
      expect(await auditCount(t, 'identity.sessions.revoked_everywhere', person.identityId)).toBe(succeeded);

      const rows = await sessionsOf(db, person.identityId);
      expect(rows).toHaveLength(SIGN_OUTS + SIGN_INS);
      const grants = new Map<string, Grant>();
      for (const g of existing) grants.set(sidOf(g.accessToken), g);
      for (const r of signIns) {
        const g = r.json().data as Grant;
        grants.set(sidOf(g.accessToken), g);
      }
      expect(grants.size).toBe(SIGN_OUTS + SIGN_INS);
      for (const row of rows) {
        const g = grants.get(row.id)!;
        const seen = await context(t.app, g.accessToken);
        if (row.epoch < epoch) {
          // Older epoch: dead, whether it was revoked row by row or committed after the bump.
          expectRefusals([seen], 401, 'identity.session_required');
          expectRefusals([await renew(t.app, g.refreshToken)], 401, 'identity.renewal_refused');
          if (row.revoked_at === null) deadOnArrival++;
        } else {
          // Stamped with the final epoch: read after the last bump committed, so it is live.
          expect(row.epoch).toBe(epoch);
          expect(row.revoked_at).toBeNull();
          expect(seen.statusCode, seen.body).toBe(200);
        }
      }
      // Every session that existed before the race is dead.
      for (const g of existing) {
        expectRefusals([await context(t.app, g.accessToken)], 401, 'identity.session_required');
      }
      // No row of an older epoch was revoked by anything but a sign-out everywhere.
      const reasons = await sql<{ reason: string | null }>`
        SELECT DISTINCT revoked_reason AS reason FROM sessions
        WHERE identity_id = ${person.identityId} AND revoked_at IS NOT NULL`.execute(db);
      expect(reasons.rows.map((r) => r.reason)).toEqual(['signed_out_everywhere']);

      // Another identity is untouched, and a sign-in after the race is live.
      expect((await context(t.app, otherGrant.accessToken)).statusCode).toBe(200);
      const fresh = await signIn(t.app, person);
      expect((await context(t.app, fresh.accessToken)).statusCode).toBe(200);
    }
    // The race really happened: some sign-in read the epoch before a bump and committed after it
    // (its row was never revoked, yet it is dead on arrival).
    expect(deadOnArrival).toBeGreaterThanOrEqual(1);
  });
});
