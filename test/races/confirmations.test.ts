import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { race, signIn } from '../helpers/identities.js';
import { waitForCode } from '../helpers/outbox.js';
import {
  challengesOf,
  confirm,
  emailForm,
  identifierRow,
  lastCode,
  PASSWORD,
  signUp,
  uniqueEmail,
} from '../registration/helpers.js';
import { DEFAULT_POLICY, type Factor, post, totp } from '../second-factors/helpers.js';
import { addMethod, CONFIRMATION_REFUSED, confirmMethod, listMethods } from '../sign-in-methods/support.js';
import { expectRefusals, identityRow, ROUNDS, raceApp, scalar, statuses, times } from './support.js';

// Race 3 (interface 4.2, 4.4, 4.6): several confirmations with one code, exactly one consumes it.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

describe('confirmations with one code', () => {
  it(`10 sign-up confirmations at once: one 204, the identifier verified once, one audit record (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`race3-${round}`);
      expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
      const code = lastCode(t.config.dataDir, address);
      const [pending] = await identifierRow(t.ctx.database.db, address);
      expect(pending.verified_at).toBeNull();

      const answers = await race(10, () =>
        confirm(t.app, { ...emailForm(address), password: PASSWORD, code }),
      );

      expect(statuses(answers), `round ${round}`).toEqual([204, ...times(9, 422)]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 422),
        422,
        'identity.verification_refused',
      );
      const rows = await identifierRow(t.ctx.database.db, address);
      expect(rows).toHaveLength(1);
      expect(rows[0].verified_at).not.toBeNull();
      const identityId = rows[0].identity_id;
      expect(identityId).toBe(pending.identity_id);
      expect(await auditCount(t, 'identity.identifier.verified', identityId)).toBe(1);
      // The one challenge is spent; the losers charged nothing (a lost race is not a guess).
      const challenges = await challengesOf(t.ctx.database.db, address);
      expect(challenges).toHaveLength(1);
      expect(challenges[0].spent_at).not.toBeNull();
      expect(challenges[0].attempts).toBe(0);
      const identity = await identityRow(t, identityId);
      expect(identity.failed_attempts).toBe(0);
      expect(identity.password_hash).not.toBeNull();
      // One identity for the address, and the registration's password opens a session.
      expect(
        await scalar(
          t,
          sql`SELECT count(DISTINCT identity_id)::int AS n FROM challenges
                            WHERE identifier_id = ${rows[0].id}`,
        ),
      ).toBe(1);
      await signIn(t.app, { email: address, password: PASSWORD });
      // The code stays spent.
      expectRefusals(
        [await confirm(t.app, { ...emailForm(address), password: PASSWORD, code })],
        422,
        'identity.verification_refused',
      );
    }
  });

  it(`two sign-in-method confirmations at once: one 204, one address added (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, headers } = await elevatedPerson(t);
      const address = uniqueEmail(`race3m-${round}`);
      const added = await addMethod(t.app, headers, { identifierType: 'email', identifier: address });
      expect(added.statusCode, added.body).toBe(201);
      const code = await waitForCode(t.config.dataDir, address, 1);

      const answers = await race(2, () => confirmMethod(t.app, headers, code));

      expect(statuses(answers), `round ${round}`).toEqual([204, 422]);
      expect(answers.find((r) => r.statusCode === 422)!.json()).toEqual(CONFIRMATION_REFUSED);
      const rows = await sql<{ verified: boolean; removed: boolean }>`
        SELECT verified_at IS NOT NULL AS verified, removed_at IS NOT NULL AS removed FROM identifiers
        WHERE identity_id = ${person.identityId} AND value = ${address}`.execute(t.ctx.database.db);
      expect(rows.rows).toEqual([{ verified: true, removed: false }]);
      const challenges = await sql<{ spent: boolean; attempts: number }>`
        SELECT spent_at IS NOT NULL AS spent, attempts FROM challenges
        WHERE identity_id = ${person.identityId} AND purpose = 'sign_in_method'`.execute(t.ctx.database.db);
      expect(challenges.rows).toEqual([{ spent: true, attempts: 0 }]);
      expect(await auditCount(t, 'identity.sign_in_method.verified', person.identityId)).toBe(1);
      // The loser either lost the compare-and-set (no count) or read after the commit and missed
      // like a replayed code (one count, never more).
      expect((await identityRow(t, person.identityId)).failed_attempts).toBeLessThanOrEqual(1);
      expect((await listMethods(t.app, grant.accessToken)).filter((m) => m.kind === 'email')).toHaveLength(2);
    }
  });

  it(`two enrolment confirmations in one time step: one 204, last_used_step set once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, elevation } = await elevatedPerson(t);
      const enrolled = await post(t.app, '/second-factors', {
        token: grant.accessToken,
        elevation,
        payload: {},
      });
      expect(enrolled.statusCode, enrolled.body).toBe(201);
      const factor = enrolled.json().data as Factor;
      const now = t.clock.now();
      const code = totp(factor.secret, DEFAULT_POLICY, now);

      const answers = await race(2, () =>
        post(t.app, '/second-factors/confirmations', { token: grant.accessToken, payload: { code } }),
      );

      expect(statuses(answers), `round ${round}`).toEqual([204, 403]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 403),
        403,
        'identity.second_factor_confirmation_refused',
      );
      const rows = await sql<{ verified: boolean; last_used_step: number; revoked: boolean }>`
        SELECT verified_at IS NOT NULL AS verified, last_used_step, revoked_at IS NOT NULL AS revoked
        FROM second_factors WHERE identity_id = ${person.identityId}`.execute(t.ctx.database.db);
      expect(rows.rows.map((r) => ({ ...r, last_used_step: Number(r.last_used_step) }))).toEqual([
        {
          verified: true,
          last_used_step: Math.floor(now.getTime() / 1000 / DEFAULT_POLICY.period),
          revoked: false,
        },
      ]);
      expect(await auditCount(t, 'identity.second_factor.verified', factor.id)).toBe(1);
      // Serialised on the identity row: the loser found nothing pending, one counted failure.
      expect((await identityRow(t, person.identityId)).failed_attempts).toBe(1);
      const again = await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code },
      });
      expectRefusals([again], 403, 'identity.second_factor_confirmation_refused');
      t.clock.advance(DEFAULT_POLICY.period);
    }
  });
});
