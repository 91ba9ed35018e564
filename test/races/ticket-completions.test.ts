import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/platform/crypto/tokens.js';
import type { TestApp } from '../helpers/app.js';
import { elevate } from '../helpers/elevation.js';
import { type Grant, race } from '../helpers/identities.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  get,
  personWithFactor,
  post,
  ticketFor,
  totp,
} from '../second-factors/helpers.js';
import { context } from '../sessions/support.js';
import { expectRefusals, identityRow, ROUNDS, raceApp, scalar, statuses } from './support.js';

// Race 2 (interface 3, 4.3): two simultaneous completions of one second-factor ticket.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

async function ticketRow(ticket: string) {
  const r = await sql<{ spent: boolean; attempts: number }>`
    SELECT spent_at IS NOT NULL AS spent, attempts FROM second_factor_tickets
    WHERE ticket_hash = ${sha256Hex(ticket)}`.execute(t.ctx.database.db);
  expect(r.rows).toHaveLength(1);
  return r.rows[0];
}

function sessionCount(identityId: string) {
  return scalar(t, sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${identityId}`);
}

describe('two simultaneous completions of one ticket', () => {
  it(`with one authenticator code: exactly one session, the ticket spent once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, factor } = await personWithFactor(t);
      const ticket = await ticketFor(t.app, person);
      const now = t.clock.now();
      const code = totp(factor.secret, DEFAULT_POLICY, now);
      const before = await sessionCount(person.identityId);

      const answers = await race(2, () => completeSignIn(t.app, { secondFactorTicket: ticket, code }));

      expect(statuses(answers), `round ${round}`).toEqual([201, 401]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 401),
        401,
        'identity.second_factor_refused',
      );
      const grant = answers.find((r) => r.statusCode === 201)!.json().data as Grant;
      expect(grant.kind).toBe('session');
      expect((await context(t.app, grant.accessToken)).statusCode).toBe(200);
      expect(await sessionCount(person.identityId)).toBe(before + 1);

      // Spent once; the loser found it spent and was refused without charging it or the identity.
      expect(await ticketRow(ticket)).toEqual({ spent: true, attempts: 0 });
      expect((await identityRow(t, person.identityId)).failed_attempts).toBe(0);
      const step = await sql<{ last_used_step: number }>`
        SELECT last_used_step FROM second_factors WHERE id = ${factor.id}`.execute(t.ctx.database.db);
      expect(Number(step.rows[0].last_used_step)).toBe(
        Math.floor(now.getTime() / 1000 / DEFAULT_POLICY.period),
      );
      // The spent ticket stays spent.
      expectRefusals(
        [await completeSignIn(t.app, { secondFactorTicket: ticket, code })],
        401,
        'identity.second_factor_refused',
      );
    }
  });

  it(`with two different recovery codes: exactly one session, only the winner's code used (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, factor } = await personWithFactor(t);
      const elevation = await elevate(t, grant.accessToken, person.email, {
        secret: factor.secret,
        policy: DEFAULT_POLICY,
      });
      const issued = await post(t.app, '/recovery-codes', { token: grant.accessToken, elevation });
      expect(issued.statusCode, issued.body).toBe(201);
      const codes = issued.json().data.recoveryCodes as string[];
      const ticket = await ticketFor(t.app, person);
      const before = await sessionCount(person.identityId);

      const answers = await race(2, (i) =>
        completeSignIn(t.app, { secondFactorTicket: ticket, recoveryCode: codes[i] }),
      );

      expect(statuses(answers), `round ${round}`).toEqual([201, 401]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 401),
        401,
        'identity.second_factor_refused',
      );
      expect(await sessionCount(person.identityId)).toBe(before + 1);
      expect(await ticketRow(ticket)).toEqual({ spent: true, attempts: 0 });

      // One code used, the winner's; the loser's code was never touched and still works.
      const winner = answers.findIndex((r) => r.statusCode === 201);
      const used = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM recovery_codes
            WHERE identity_id = ${person.identityId} AND used_at IS NOT NULL`,
      );
      expect(used).toBe(1);
      expect((await get(t.app, '/recovery-codes', grant.accessToken)).json().data.remaining).toBe(9);
      const next = await ticketFor(t.app, person);
      expectRefusals(
        [await completeSignIn(t.app, { secondFactorTicket: next, recoveryCode: codes[winner] })],
        401,
        'identity.second_factor_refused',
      );
      const again = await ticketFor(t.app, person);
      const ok = await completeSignIn(t.app, { secondFactorTicket: again, recoveryCode: codes[1 - winner] });
      expect(ok.statusCode, ok.body).toBe(201);
    }
  });
});
