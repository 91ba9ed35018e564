import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import {
  API,
  completeSignIn,
  DEFAULT_POLICY,
  expectIdentical,
  get,
  isLocked,
  personWithFactor,
  post,
  ticketFor,
  totp,
  wrongCode,
} from '../second-factors/helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

async function issueCodes(
  person: { email: string },
  accessToken: string,
  factor?: { secret: string },
): Promise<string[]> {
  // Holding a factor, the step-up must prove it (contract 3).
  const authenticator = factor && { secret: factor.secret, policy: DEFAULT_POLICY };
  const elevation = await elevate(t, accessToken, person.email, authenticator);
  const res = await post(t.app, '/recovery-codes', { token: accessToken, elevation });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data.recoveryCodes as string[];
}

async function history(accessToken: string) {
  const res = await get(t.app, '/sign-ins/history', accessToken);
  return res.json().data as { method: string; outcome: string }[];
}

describe('POST /sign-ins with an active second factor', () => {
  it('answers a ticket and no token of any kind; only after the password is proven', async () => {
    const { person } = await personWithFactor(t);
    const res = await t.app.inject({
      method: 'POST',
      url: `${API}/sign-ins`,
      payload: { identifierType: 'email', identifier: person.email, password: person.password },
    });
    expect(res.statusCode).toBe(201);
    const data = res.json().data;
    expect(Object.keys(data).sort()).toEqual(['kind', 'secondFactorTicket', 'ticketExpiresAt']);
    expect(data.kind).toBe('second_factor_required');
    expect(data.secondFactorTicket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Date(data.ticketExpiresAt).getTime() - t.clock.now().getTime()).toBe(300_000);
    expect(res.body).not.toMatch(/accessToken|refreshToken|eyJ/);

    const wrongPassword = await t.app.inject({
      method: 'POST',
      url: `${API}/sign-ins`,
      payload: { identifierType: 'email', identifier: person.email, password: 'not the password' },
    });
    expect(wrongPassword.statusCode).toBe(401);
    expect(wrongPassword.json().code).toBe('identity.sign_in_refused');
  });
});

describe('POST /sign-ins/second-factors', () => {
  it('opens a session with the current code, consumes the ticket and records the method', async () => {
    const { person, factor } = await personWithFactor(t);
    const ticket = await ticketFor(t.app, person);
    const res = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(res.statusCode, res.body).toBe(201);
    const grant = res.json().data;
    expect(grant.kind).toBe('session');
    const context = await t.app.inject({
      method: 'GET',
      url: `${API}/session/context`,
      headers: bearer(grant.accessToken),
    });
    expect(context.statusCode).toBe(200);
    expect(context.json().data.identityId).toBe(person.identityId);
    expect((await history(grant.accessToken))[0]).toMatchObject({
      method: 'second_factor',
      outcome: 'succeeded',
    });

    t.clock.advance(30);
    const again = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(again.statusCode).toBe(401);
  });

  it('answers the identical 401 for every failed completion', async () => {
    const { person, factor, grant } = await personWithFactor(t);
    const stranger = await personWithFactor(t);
    const strangerCodes = await issueCodes(stranger.person, stranger.grant.accessToken, stranger.factor);
    // The helper's session was opened before the factor existed, so it is still a plain session.
    const codes = await issueCodes(person, grant.accessToken, factor);
    const now = () => t.clock.now();
    const refusals = [];

    // Wrong authenticator code.
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        code: wrongCode(factor.secret, DEFAULT_POLICY, now()),
      }),
    );
    // A code already used in its time step.
    const used = totp(factor.secret, DEFAULT_POLICY, now());
    expect(
      (await completeSignIn(t.app, { secondFactorTicket: await ticketFor(t.app, person), code: used }))
        .statusCode,
    ).toBe(201);
    refusals.push(
      await completeSignIn(t.app, { secondFactorTicket: await ticketFor(t.app, person), code: used }),
    );
    // Invented ticket.
    refusals.push(await completeSignIn(t.app, { secondFactorTicket: 'A'.repeat(43), code: used }));
    // Spent ticket.
    t.clock.advance(30);
    const spent = await ticketFor(t.app, person);
    expect(
      (
        await completeSignIn(t.app, {
          secondFactorTicket: spent,
          code: totp(factor.secret, DEFAULT_POLICY, now()),
        })
      ).statusCode,
    ).toBe(201);
    t.clock.advance(30);
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: spent,
        code: totp(factor.secret, DEFAULT_POLICY, now()),
      }),
    );
    // Expired ticket.
    const expiring = await ticketFor(t.app, person);
    t.clock.advance(t.config.lifetimes.ticket);
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: expiring,
        code: totp(factor.secret, DEFAULT_POLICY, now()),
      }),
    );
    // Wrong recovery code.
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        recoveryCode: 'AAAA-AAAA-AAAA-AAAA',
      }),
    );
    // Spent recovery code.
    expect(
      (
        await completeSignIn(t.app, {
          secondFactorTicket: await ticketFor(t.app, person),
          recoveryCode: codes[0],
        })
      ).statusCode,
    ).toBe(201);
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        recoveryCode: codes[0],
      }),
    );
    // Foreign recovery code (a live code of another identity).
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        recoveryCode: strangerCodes[0],
      }),
    );
    // Revoked recovery code (its batch was replaced).
    await issueCodes(person, grant.accessToken, factor);
    refusals.push(
      await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        recoveryCode: codes[1],
      }),
    );

    expectIdentical(refusals, 401, 'identity.second_factor_refused');
    // The stranger's code was not spent by the refusal.
    expect((await get(t.app, '/recovery-codes', stranger.grant.accessToken)).json().data.remaining).toBe(10);
  });

  it('refuses a body with both proofs, or neither, with 400', async () => {
    const { person, factor } = await personWithFactor(t);
    const ticket = await ticketFor(t.app, person);
    const code = totp(factor.secret, DEFAULT_POLICY, t.clock.now());
    for (const body of [
      { secondFactorTicket: ticket, code, recoveryCode: 'AAAA-AAAA-AAAA-AAAA' },
      { secondFactorTicket: ticket },
      { code },
      { secondFactorTicket: ticket, code, extra: 'x' },
      { secondFactorTicket: ticket, code: '12345' },
      { secondFactorTicket: ticket, recoveryCode: 'AAAA_AAAA' },
    ]) {
      const res = await completeSignIn(t.app, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().code).toBe('validation.failed');
    }
    // The ticket was not charged by any of them.
    expect((await completeSignIn(t.app, { secondFactorTicket: ticket, code })).statusCode).toBe(201);
  });

  it('allows 5 attempts per ticket: then even the correct code is 401, never 423', async () => {
    const { person, factor } = await personWithFactor(t);
    const ticket = await ticketFor(t.app, person);
    const wrong = wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now());
    for (let i = 1; i <= 5; i++) {
      const res = await completeSignIn(t.app, { secondFactorTicket: ticket, code: wrong });
      // The fifth also trips the account lock, and still answers 401.
      expect(res.statusCode, `attempt ${i}`).toBe(401);
    }
    expect(await isLocked(t, person.identityId)).toBe(true);
    const correct = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(correct.statusCode).toBe(401);
    expect(correct.json().code).toBe('identity.second_factor_refused');
    const wrongAgain = await completeSignIn(t.app, { secondFactorTicket: ticket, code: wrong });
    expect(wrongAgain.statusCode).toBe(401);
  });

  it('counts wrong codes across fresh tickets: the tripping failure is 401, the next 423, a correct code clears the lock', async () => {
    const { person, factor } = await personWithFactor(t);
    const wrong = wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now());
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      const ticket = await ticketFor(t.app, person);
      statuses.push((await completeSignIn(t.app, { secondFactorTicket: ticket, code: wrong })).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    const ticket = await ticketFor(t.app, person);
    const locked = await completeSignIn(t.app, { secondFactorTicket: ticket, code: wrong });
    expect(locked.statusCode).toBe(423);
    expect(locked.json().code).toBe('identity.sign_in_second_factor_locked');
    // The same ticket (one attempt used) admits the correct code on the locked account.
    const ok = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(await isLocked(t, person.identityId)).toBe(false);
    const h = await history(ok.json().data.accessToken);
    expect(h.filter((e) => e.method === 'second_factor' && e.outcome === 'refused')).toHaveLength(6);
  });

  it('stamps the epoch read before the password: a sign-out everywhere in between leaves the new session dead', async () => {
    const { person, factor } = await personWithFactor(t);
    const ticket = await ticketFor(t.app, person);
    // Another live session of the identity signs out everywhere while the second step is pending.
    const otherTicket = await ticketFor(t.app, person);
    const other = await completeSignIn(t.app, {
      secondFactorTicket: otherTicket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(
      (await post(t.app, '/sign-outs/everywhere', { token: other.json().data.accessToken })).statusCode,
    ).toBe(204);
    t.clock.advance(30);
    const late = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(late.statusCode).toBe(201);
    const context = await t.app.inject({
      method: 'GET',
      url: `${API}/session/context`,
      headers: bearer(late.json().data.accessToken),
    });
    expect(context.statusCode).toBe(401);
  });

  it('is rate limited as a route that answers a challenge', async () => {
    const limited = await createTestApp({ env: { RATE_LIMIT_ANSWERS_A_CHALLENGE: '2/60' } });
    try {
      const body = { secondFactorTicket: 'A'.repeat(43), code: '123456' };
      const first = await post(limited.app, '/sign-ins/second-factors', { payload: body });
      const second = await post(limited.app, '/sign-ins/second-factors', { payload: body });
      const third = await post(limited.app, '/sign-ins/second-factors', { payload: body });
      expect([first.statusCode, second.statusCode, third.statusCode]).toEqual([401, 401, 429]);
      expect(third.json().code).toBe('rate_limit.exceeded');
    } finally {
      await limited.close();
    }
  });
});

describe('recovery codes', () => {
  it('issues ten unique codes once; status reports the remaining count and issuedAt only while codes remain', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const empty = await get(t.app, '/recovery-codes', grant.accessToken);
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ data: { remaining: 0 } });

    const codes = await issueCodes(person, grant.accessToken);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes)
      expect(c).toMatch(/^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);
    const status = await get(t.app, '/recovery-codes', grant.accessToken);
    expect(status.json()).toEqual({ data: { remaining: 10, issuedAt: t.clock.now().toISOString() } });
    expect(status.body).not.toContain(codes[0]);
    // Stored as keyed hashes only.
    const rows = await sql<{ code_hash: string }>`
      SELECT code_hash FROM recovery_codes WHERE identity_id = ${person.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(rows.rows.map((r) => r.code_hash).join()).not.toContain(codes[0].replace(/-/g, ''));
    const audit = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM audit_records WHERE name = 'identity.recovery_codes.issued' AND actor = ${person.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(audit.rows[0].n).toBe(1);
  });

  it('accepts a code in either case and without hyphens at the second step, and counts it down', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const codes = await issueCodes(person, grant.accessToken, factor);
    const forms = [
      codes[0].toLowerCase(),
      codes[1].replace(/-/g, ''),
      codes[2].replace(/-/g, '').toLowerCase(),
      codes[3],
    ];
    for (const [i, recoveryCode] of forms.entries()) {
      const res = await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        recoveryCode,
      });
      expect(res.statusCode, res.body).toBe(201);
      const status = await get(t.app, '/recovery-codes', res.json().data.accessToken);
      expect(status.json().data.remaining).toBe(9 - i);
      if (i === 0) {
        expect((await history(res.json().data.accessToken))[0]).toMatchObject({
          method: 'recovery_code',
          outcome: 'succeeded',
        });
      }
    }
  });

  it('reports no issuedAt once every code is used, and replaces the live batch on reissue', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const codes = await issueCodes(person, grant.accessToken, factor);
    for (const recoveryCode of codes) {
      const res = await completeSignIn(t.app, {
        secondFactorTicket: await ticketFor(t.app, person),
        recoveryCode,
      });
      expect(res.statusCode).toBe(201);
    }
    expect((await get(t.app, '/recovery-codes', grant.accessToken)).json()).toEqual({
      data: { remaining: 0 },
    });
    t.clock.advance(60);
    const next = await issueCodes(person, grant.accessToken, factor);
    const status = (await get(t.app, '/recovery-codes', grant.accessToken)).json().data;
    expect(status).toEqual({ remaining: 10, issuedAt: t.clock.now().toISOString() });
    // Used codes keep their used state; the new batch replaces, it does not add.
    const counts = await sql<{ used: number; live: number }>`
      SELECT count(*) FILTER (WHERE used_at IS NOT NULL)::int AS used,
             count(*) FILTER (WHERE used_at IS NULL AND revoked_at IS NULL)::int AS live
      FROM recovery_codes WHERE identity_id = ${person.identityId}`.execute(t.ctx.database.db);
    expect(counts.rows[0]).toEqual({ used: 10, live: 10 });
    await issueCodes(person, grant.accessToken, factor);
    expect((await get(t.app, '/recovery-codes', grant.accessToken)).json().data.remaining).toBe(10);
    const stale = await completeSignIn(t.app, {
      secondFactorTicket: await ticketFor(t.app, person),
      recoveryCode: next[0],
    });
    expect(stale.statusCode).toBe(401);
  });

  it('requires a session and an elevation to issue', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const noSession = await post(t.app, '/recovery-codes');
    expect(noSession.statusCode).toBe(401);
    const noElevation = await post(t.app, '/recovery-codes', { token: grant.accessToken });
    expect(noElevation.statusCode).toBe(403);
    expect(noElevation.json().code).toBe('identity.elevation_required');
    expect((await t.app.inject({ method: 'GET', url: `${API}/recovery-codes` })).statusCode).toBe(401);
  });
});
