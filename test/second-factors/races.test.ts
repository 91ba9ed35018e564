import { type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevate } from '../helpers/elevation.js';
import { createPerson, race, signIn } from '../helpers/identities.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  type Factor,
  get,
  personWithFactor,
  post,
  ticketFor,
  totp,
  wrongCode,
} from './helpers.js';

// Races are decided by the database, so they run against the PostgreSQL server whatever the pass.
let t: TestApp;
const ROUNDS = 5;

beforeAll(async () => {
  t = await createTestApp({ server: true });
});
afterAll(async () => {
  await t.close();
});

async function count(query: RawBuilder<unknown>): Promise<number> {
  return ((await query.execute(t.ctx.database.db)).rows[0] as { n: number }).n;
}

describe('races on the PostgreSQL server', () => {
  it('two simultaneous completions of one ticket open exactly one session', async () => {
    const { person, factor } = await personWithFactor(t);
    for (let round = 0; round < ROUNDS; round++) {
      t.clock.advance(DEFAULT_POLICY.period);
      const ticket = await ticketFor(t.app, person);
      const code = totp(factor.secret, DEFAULT_POLICY, t.clock.now());
      const before = await count(
        sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${person.identityId}`,
      );
      const results = await race(2, () => completeSignIn(t.app, { secondFactorTicket: ticket, code }));
      expect(results.map((r) => r.statusCode).sort()).toEqual([201, 401]);
      const after = await count(
        sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${person.identityId}`,
      );
      expect(after - before).toBe(1);
    }
  });

  it('two simultaneous completions with one recovery code on two tickets: one session', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const elevation = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const codes = (await post(t.app, '/recovery-codes', { token: grant.accessToken, elevation })).json().data
      .recoveryCodes as string[];
    for (let round = 0; round < ROUNDS; round++) {
      const tickets = [await ticketFor(t.app, person), await ticketFor(t.app, person)];
      const results = await race(2, (i) =>
        completeSignIn(t.app, { secondFactorTicket: tickets[i], recoveryCode: codes[round] }),
      );
      expect(results.map((r) => r.statusCode).sort()).toEqual([201, 401]);
    }
    expect((await get(t.app, '/recovery-codes', grant.accessToken)).json().data.remaining).toBe(10 - ROUNDS);
  });

  it('two simultaneous enrolment confirmations in one time step: one 204', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const person = await createPerson(t.ctx);
      const grant = await signIn(t.app, person);
      const elevation = await elevate(t, grant.accessToken, person.email);
      const factor = (
        await post(t.app, '/second-factors', { token: grant.accessToken, elevation, payload: {} })
      ).json().data as Factor;
      const code = totp(factor.secret, DEFAULT_POLICY, t.clock.now());
      const results = await race(2, () =>
        post(t.app, '/second-factors/confirmations', { token: grant.accessToken, payload: { code } }),
      );
      expect(results.map((r) => r.statusCode).sort()).toEqual([204, 403]);
      expect((await get(t.app, '/second-factors', grant.accessToken)).json().data).toHaveLength(1);
    }
  });

  it('ten concurrent recovery-code issuances leave exactly one live batch of ten', async () => {
    for (let round = 0; round < 3; round++) {
      const person = await createPerson(t.ctx);
      const grant = await signIn(t.app, person);
      const elevation = await elevate(t, grant.accessToken, person.email);
      const results = await race(10, () =>
        post(t.app, '/recovery-codes', { token: grant.accessToken, elevation }),
      );
      expect(results.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
      const live = await sql<{ batch_id: string; n: number }>`
        SELECT batch_id, count(*)::int AS n FROM recovery_codes
        WHERE identity_id = ${person.identityId} AND used_at IS NULL AND revoked_at IS NULL
        GROUP BY batch_id`.execute(t.ctx.database.db);
      expect(live.rows).toHaveLength(1);
      expect(live.rows[0].n).toBe(10);
      const total = await count(
        sql`SELECT count(*)::int AS n FROM recovery_codes WHERE identity_id = ${person.identityId}`,
      );
      expect(total).toBe(100);
      expect((await get(t.app, '/recovery-codes', grant.accessToken)).json().data.remaining).toBe(10);
    }
  });

  it('ten concurrent wrong second-step codes crossing the threshold write exactly one lock audit record', async () => {
    for (let round = 0; round < 3; round++) {
      const { person, factor } = await personWithFactor(t);
      const tickets: string[] = [];
      for (let i = 0; i < 10; i++) tickets.push(await ticketFor(t.app, person));
      const wrong = wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now());
      const results = await race(10, (i) =>
        completeSignIn(t.app, { secondFactorTicket: tickets[i], code: wrong }),
      );
      const statuses = results.map((r) => r.statusCode);
      // Counted one by one under the identity row lock: five before and including the trip, five after.
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 423)).toHaveLength(5);
      expect(await auditCount(t, 'identity.account.locked', { actor: person.identityId })).toBe(1);
    }
  });

  it('concurrent enrolments leave one live pending row, and only its secret confirms', async () => {
    for (let round = 0; round < 3; round++) {
      const person = await createPerson(t.ctx);
      const grant = await signIn(t.app, person);
      const elevation = await elevate(t, grant.accessToken, person.email);
      const results = await race(10, () =>
        post(t.app, '/second-factors', { token: grant.accessToken, elevation, payload: {} }),
      );
      expect(results.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
      const pending = await sql<{ id: string }>`
        SELECT id FROM second_factors
        WHERE identity_id = ${person.identityId} AND verified_at IS NULL AND revoked_at IS NULL`.execute(
        t.ctx.database.db,
      );
      expect(pending.rows).toHaveLength(1);
      const factors = results.map((r) => r.json().data as Factor);
      const winner = factors.find((f) => f.id === pending.rows[0].id)!;
      expect(winner).toBeDefined();
      const loser = factors.find((f) => f.id !== winner.id)!;
      const stale = await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: totp(loser.secret, DEFAULT_POLICY, t.clock.now()) },
      });
      expect(stale.statusCode).toBe(403);
      const ok = await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: totp(winner.secret, DEFAULT_POLICY, t.clock.now()) },
      });
      expect(ok.statusCode, ok.body).toBe(204);
    }
  });
});
