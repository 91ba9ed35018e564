import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_THRESHOLD } from '../../src/features/identities/lock.js';
import { sha256Hex } from '../../src/platform/crypto/tokens.js';
import type { TestApp } from '../helpers/app.js';
import { elevate, elevated } from '../helpers/elevation.js';
import { race } from '../helpers/identities.js';
import { waitForCode } from '../helpers/outbox.js';
import {
  challengesOf,
  confirm,
  emailForm,
  identifierRow,
  lastCode,
  otherCode,
  PASSWORD,
  signUp,
  uniqueEmail,
} from '../registration/helpers.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  personWithFactor,
  post,
  ticketFor,
  totp,
  wrongCode,
} from '../second-factors/helpers.js';
import { addMethod, confirmMethod } from '../sign-in-methods/support.js';
import { expectRefusals, identityRow, ROUNDS, raceApp, scalar, statuses, times } from './support.js';

// Race 9 (interface 3, 4.2, 4.3, 4.4, 4.6, step-up): concurrent wrong guesses crossing the identity-wide
// lock threshold. Counted one by one under the identity row lock: exactly one transaction trips
// the lock and writes the audit record, and every failure is counted.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

const GUESSES = 10;

async function lockAudits(identityId: string) {
  const r = await sql<{ route: string }>`
    SELECT details->>'route' AS route FROM audit_records
    WHERE name = 'identity.account.locked' AND target = ${identityId}`.execute(t.ctx.database.db);
  return r.rows.map((row) => row.route);
}

function sessionCount(identityId: string) {
  return scalar(t, sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${identityId}`);
}

function codes(answers: LightMyRequestResponse[]): string[] {
  return answers.map((r) => `${r.statusCode} ${r.json().code}`);
}

describe('wrong guesses crossing the lock threshold at once', () => {
  it(`10 wrong second-step codes on 10 tickets: one lock record, 10 failures counted (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { person, factor } = await personWithFactor(t);
      const tickets: string[] = [];
      for (let i = 0; i < GUESSES; i++) tickets.push(await ticketFor(t.app, person));
      const wrong = wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now());
      const sessionsBefore = await sessionCount(person.identityId);

      const answers = await race(GUESSES, (i) =>
        completeSignIn(t.app, { secondFactorTicket: tickets[i], code: wrong }),
      );

      // Four before the trip and the trip itself answer 401; the five after it find the lock on.
      expect(statuses(answers), `round ${round}`).toEqual([
        ...times(LOCK_THRESHOLD, 401),
        ...times(GUESSES - LOCK_THRESHOLD, 423),
      ]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 401),
        401,
        'identity.second_factor_refused',
      );
      expectRefusals(
        answers.filter((r) => r.statusCode === 423),
        423,
        'identity.sign_in_second_factor_locked',
      );
      expect(await lockAudits(person.identityId)).toEqual(['sign-ins/second-factors']);
      const identity = await identityRow(t, person.identityId);
      expect(identity.failed_attempts).toBe(GUESSES);
      expect(identity.locked_until).not.toBeNull();
      // Each ticket charged exactly once, none spent, no session opened.
      const rows = await sql<{ attempts: number; spent: boolean }>`
        SELECT attempts, spent_at IS NOT NULL AS spent FROM second_factor_tickets
        WHERE ticket_hash = ANY(${tickets.map((x) => sha256Hex(x))})`.execute(t.ctx.database.db);
      expect(rows.rows).toEqual(times(GUESSES, 0).map(() => ({ attempts: 1, spent: false })));
      expect(await sessionCount(person.identityId)).toBe(sessionsBefore);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM sign_in_attempts
              WHERE identity_id = ${person.identityId} AND outcome = 'refused'`,
        ),
      ).toBe(GUESSES);

      // The lock only stops guessing: the correct code on a charged ticket still opens a session
      // and clears the lock.
      const ok = await completeSignIn(t.app, {
        secondFactorTicket: tickets[0],
        code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
      });
      expect(ok.statusCode, ok.body).toBe(201);
      const cleared = await identityRow(t, person.identityId);
      expect({ failed: cleared.failed_attempts, locked: cleared.locked_until }).toEqual({
        failed: 0,
        locked: null,
      });
    }
  });

  it(`10 wrong guesses spread over four routes: one lock record, counted across routes (${ROUNDS} rounds)`, async () => {
    // Route of the guess -> [refusal before the lock, refusal once locked] and the audit's route name.
    const routes = {
      ticket: {
        refused: '401 identity.second_factor_refused',
        locked: '423 identity.sign_in_second_factor_locked',
      },
      enrolment: {
        refused: '403 identity.second_factor_confirmation_refused',
        locked: '423 identity.second_factor_locked',
      },
      method: {
        refused: '422 identity.sign_in_method_confirmation_refused',
        locked: '423 identity.sign_in_method_locked',
      },
      stepUp: {
        refused: '403 identity.step_up_confirmation_refused',
        locked: '423 identity.step_up_locked',
      },
    } as const;
    const plan: (keyof typeof routes)[] = [
      'ticket',
      'enrolment',
      'method',
      'stepUp',
      'ticket',
      'enrolment',
      'method',
      'ticket',
      'method',
      'ticket',
    ];
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, factor } = await personWithFactor(t);
      const headers = elevated(
        grant.accessToken,
        await elevate(t, grant.accessToken, person.email, { secret: factor.secret, policy: DEFAULT_POLICY }),
      );
      const address = uniqueEmail(`race9-${round}`);
      expect(
        (await addMethod(t.app, headers, { identifierType: 'email', identifier: address })).statusCode,
      ).toBe(201);
      const methodCode = await waitForCode(t.config.dataDir, address, 1);
      const tickets: string[] = [];
      for (const r of plan) if (r === 'ticket') tickets.push(await ticketFor(t.app, person));
      const wrong = wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now());
      // A fresh step-up of the same session (its elevation above stays live), answered wrongly;
      // holding a factor, the step-up proves it (contract 3).
      const started = await post(t.app, '/step-ups', {
        token: grant.accessToken,
        payload: { channel: 'second_factor' },
      });
      expect(started.statusCode, started.body).toBe(201);
      const challengeId = started.json().data.challengeId as string;

      let nextTicket = 0;
      const requests = plan.map((r) => {
        if (r === 'ticket') {
          const ticket = tickets[nextTicket++];
          return () => completeSignIn(t.app, { secondFactorTicket: ticket, code: wrong });
        }
        if (r === 'enrolment') {
          // Nothing is pending: refused like a wrong code, and counted.
          return () =>
            post(t.app, '/second-factors/confirmations', {
              token: grant.accessToken,
              payload: { code: wrong },
            });
        }
        if (r === 'stepUp') {
          return () =>
            post(t.app, '/step-ups/confirmations', {
              token: grant.accessToken,
              payload: { challengeId, code: wrong },
            });
        }
        return () => confirmMethod(t.app, headers, otherCode(methodCode));
      });

      const answers = await race(GUESSES, (i) => requests[i]());

      const trips = await lockAudits(person.identityId);
      expect(trips).toHaveLength(1);
      const identity = await identityRow(t, person.identityId);
      expect(identity.failed_attempts).toBe(GUESSES);
      expect(identity.locked_until).not.toBeNull();
      // Every answer is its route's refusal or its route's locked refusal.
      const seen = codes(answers);
      plan.forEach((r, i) => {
        expect([routes[r].refused, routes[r].locked], `round ${round}`).toContain(seen[i]);
      });
      // Serialised: four failures before the trip, five after. Only the enrolment route words its
      // tripping failure as locked; the others answer the trip with their ordinary refusal.
      const trippedByEnrolment = trips[0] === 'second-factors/confirmations';
      expect([
        'sign-ins/second-factors',
        'second-factors/confirmations',
        'sign-in-method-confirmation',
        'step-ups/confirmations',
      ]).toContain(trips[0]);
      expect(
        seen.filter((s) => s.startsWith('423 ')),
        `round ${round}: ${trips[0]}`,
      ).toHaveLength(GUESSES - LOCK_THRESHOLD + (trippedByEnrolment ? 1 : 0));
      // Each route charged its own subject once per guess.
      const method = await sql<{ attempts: number }>`
        SELECT attempts FROM challenges
        WHERE identity_id = ${person.identityId} AND purpose = 'sign_in_method'`.execute(t.ctx.database.db);
      expect(method.rows).toEqual([{ attempts: plan.filter((r) => r === 'method').length }]);
      const ticketRows = await sql<{ attempts: number }>`
        SELECT attempts FROM second_factor_tickets
        WHERE ticket_hash = ANY(${tickets.map((x) => sha256Hex(x))})`.execute(t.ctx.database.db);
      expect(ticketRows.rows).toEqual(tickets.map(() => ({ attempts: 1 })));
      const stepUps = await sql<{ attempts: number }>`
        SELECT attempts FROM challenges WHERE id = ${challengeId}`.execute(t.ctx.database.db);
      expect(stepUps.rows).toEqual([{ attempts: 1 }]);
    }
  });

  it(`10 wrong sign-up confirmations: all 422, one lock record, five failures (the allowance) (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`race9s-${round}`);
      expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
      const code = lastCode(t.config.dataDir, address);
      const [{ identity_id: identityId }] = await identifierRow(t.ctx.database.db, address);

      const answers = await race(GUESSES, () =>
        confirm(t.app, { ...emailForm(address), password: PASSWORD, code: otherCode(code) }),
      );

      // Locked or not, the answer is the same refusal.
      expect(statuses(answers), `round ${round}`).toEqual(times(GUESSES, 422));
      expectRefusals(answers, 422, 'identity.verification_refused');
      // The challenge allows five attempts: five requests charged it (one failure each on the
      // identity), the later ones found nothing live to charge.
      const [challenge] = await challengesOf(t.ctx.database.db, address);
      expect(challenge.attempts).toBe(5);
      expect(await lockAudits(identityId)).toEqual(['sign-up-confirmation']);
      const identity = await identityRow(t, identityId);
      expect(identity.failed_attempts).toBe(LOCK_THRESHOLD);
      expect(identity.locked_until).not.toBeNull();
      // Exhausted: the right code is refused too, and nothing is verified.
      expectRefusals(
        [await confirm(t.app, { ...emailForm(address), password: PASSWORD, code })],
        422,
        'identity.verification_refused',
      );
      expect((await identifierRow(t.ctx.database.db, address))[0].verified_at).toBeNull();
    }
  });
});
