import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bumpSessionEpoch } from '../../src/features/identities/repository.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Grant, race, signIn } from '../helpers/identities.js';
import {
  context,
  epochOf,
  expectProblem,
  renew,
  sessionRow,
  sessionsOf,
  sidOf,
  signInRaw,
  signOutEverywhere,
} from './support.js';

// Races are decided by the database, so these always run on the PostgreSQL server.
describe('session races on the PostgreSQL server', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ server: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('20 concurrent renewals of one refresh token: one 201, nineteen 401, then the session is revoked', async () => {
    for (let round = 0; round < 3; round++) {
      const person = await createPerson(t.ctx);
      const grant = await signIn(t.app, person);
      const sid = sidOf(grant.accessToken);

      const answers = await race(20, () => renew(t.app, grant.refreshToken));

      const winners = answers.filter((r) => r.statusCode === 201);
      const losers = answers.filter((r) => r.statusCode !== 201);
      expect(winners).toHaveLength(1);
      expect(losers).toHaveLength(19);
      for (const r of losers) expectProblem(r, 401, 'identity.renewal_refused');
      const won = winners[0].json().data as Grant;

      // A spent token presented after the rotation is a replay: the session ends.
      const row = await sessionRow(t.db.database.db, sid);
      expect(row.revoked_at).not.toBeNull();
      expect(row.revoked_reason).toBe('refresh_token_replayed');
      expect(row.generation).toBe(2);
      expectProblem(await renew(t.app, won.refreshToken), 401, 'identity.renewal_refused');
      expectProblem(await context(t.app, won.accessToken), 401, 'identity.session_required');
      expectProblem(await context(t.app, grant.accessToken), 401, 'identity.session_required');
    }
  });

  it('a chain of 50 honest renewals: all 201, sessionExpiresAt unchanged, the session stays live', async () => {
    const person = await createPerson(t.ctx);
    const first = await signIn(t.app, person);
    const sid = sidOf(first.accessToken);
    let current = first;
    const seen = new Set([first.refreshToken]);
    for (let i = 0; i < 50; i++) {
      t.clock.advance(30);
      const res = await renew(t.app, current.refreshToken);
      expect(res.statusCode, `renewal ${i + 1}: ${res.body}`).toBe(201);
      const next = res.json().data as Grant;
      expect(next.kind).toBe('session');
      expect(next.sessionExpiresAt).toBe(first.sessionExpiresAt);
      expect(sidOf(next.accessToken)).toBe(sid);
      expect(seen.has(next.refreshToken)).toBe(false);
      seen.add(next.refreshToken);
      current = next;
    }
    const row = await sessionRow(t.db.database.db, sid);
    expect(row.revoked_at).toBeNull();
    expect(row.generation).toBe(51);
    const ctx = await context(t.app, current.accessToken);
    expect(ctx.statusCode).toBe(200);
    expect(ctx.json().data.sessionId).toBe(sid);
  });

  it('20 sign-outs-everywhere with 10 sign-ins in flight: every session of an older epoch is dead', async () => {
    for (let round = 0; round < 3; round++) {
      const person = await createPerson(t.ctx);
      const bystander = await createPerson(t.ctx);
      const bystanderGrant = await signIn(t.app, bystander);
      const existing: Grant[] = [];
      for (let i = 0; i < 5; i++) existing.push(await signIn(t.app, person));
      const epochBefore = await epochOf(t.db.database.db, person.identityId);

      const answers = await race(30, (i) =>
        i % 3 === 0
          ? signInRaw(t.app, person.email, person.password)
          : signOutEverywhere(t.app, existing[i % existing.length].accessToken),
      );

      const signIns = answers.filter((_, i) => i % 3 === 0);
      const signOuts = answers.filter((_, i) => i % 3 !== 0);
      expect(signIns).toHaveLength(10);
      expect(signOuts).toHaveLength(20);
      for (const r of signIns) expect(r.statusCode, r.body).toBe(201);
      for (const r of signOuts) {
        if (r.statusCode !== 204) expectProblem(r, 401, 'identity.session_required');
      }
      const succeeded = signOuts.filter((r) => r.statusCode === 204).length;
      expect(succeeded).toBeGreaterThanOrEqual(1);

      const db = t.db.database.db;
      const finalEpoch = await epochOf(db, person.identityId);
      // Every successful sign-out-everywhere moved the epoch once and wrote its audit record.
      expect(finalEpoch).toBe(epochBefore + succeeded);
      const audits = await sql<{ n: string }>`
        SELECT count(*) AS n FROM audit_records
        WHERE name = 'identity.sessions.revoked_everywhere' AND actor = ${person.identityId}`.execute(db);
      expect(Number(audits.rows[0].n)).toBe(succeeded);

      const rows = await sessionsOf(db, person.identityId);
      expect(rows).toHaveLength(15);
      const tokenOf = new Map<string, string>();
      for (const g of existing) tokenOf.set(sidOf(g.accessToken), g.accessToken);
      for (const r of signIns) {
        const g = r.json().data as Grant;
        tokenOf.set(sidOf(g.accessToken), g.accessToken);
      }
      for (const row of rows) {
        const res = await context(t.app, tokenOf.get(row.id)!);
        if (row.epoch < finalEpoch) {
          expectProblem(res, 401, 'identity.session_required');
        } else {
          // Issued after the last epoch bump committed: live, and never revoked by it.
          expect(row.epoch).toBe(finalEpoch);
          expect(row.revoked_at).toBeNull();
          expect(res.statusCode).toBe(200);
        }
      }
      // The sessions that existed before the race are all dead.
      for (const g of existing)
        expectProblem(await context(t.app, g.accessToken), 401, 'identity.session_required');
      // Another identity is untouched; a fresh sign-in after the race works.
      expect((await context(t.app, bystanderGrant.accessToken)).statusCode).toBe(200);
      const fresh = await signIn(t.app, person);
      expect((await context(t.app, fresh.accessToken)).statusCode).toBe(200);
      expect((await renew(t.app, fresh.refreshToken)).statusCode).toBe(201);
    }
  });
});

describe('credential revoked while a sign-in verifies the password (PostgreSQL server)', () => {
  let t: TestApp;
  beforeAll(async () => {
    // A large Argon2 memory cost keeps the verification running long enough to land a revocation in it.
    t = await createTestApp({ server: true, env: { ARGON2_MEMORY_KIB: '65536' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the sign-in still answers 201 and a session issued before the revocation is dead', async () => {
    const db = t.db.database.db;
    const person = await createPerson(t.ctx);
    let inFlight = 0;
    for (let round = 0; round < 8; round++) {
      const before = await epochOf(db, person.identityId);
      const pending = signInRaw(t.app, person.email, person.password);
      // A few database round trips (never a sleep) before the revocation: round 0 fires at once,
      // later rounds land a little further into the request, inside the Argon2 verification.
      for (let i = 0; i < round * 3; i++) await sql`SELECT 1`.execute(db);
      const bumped = await bumpSessionEpoch(db, person.identityId);
      expect(bumped).toBe(before + 1);
      const res = await pending;
      expect(res.statusCode, res.body).toBe(201);
      const grant = res.json().data as Grant;
      const row = await sessionRow(db, sidOf(grant.accessToken));
      const live = await context(t.app, grant.accessToken);
      if (row.epoch !== bumped) {
        // The epoch was read before the revocation committed: the revocation is ordered after the
        // issuance, so the new session is dead on arrival.
        expect(row.epoch).toBe(before);
        expectProblem(live, 401, 'identity.session_required');
        expectProblem(await renew(t.app, grant.refreshToken), 401, 'identity.renewal_refused');
        inFlight++;
      } else {
        // The revocation committed before the sign-in read the epoch: the sign-in came after it.
        expect(live.statusCode).toBe(200);
      }
    }
    // The race really happened: at least one revocation landed while the verification ran.
    expect(inFlight).toBeGreaterThanOrEqual(1);
  });
});
