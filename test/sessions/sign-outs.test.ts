import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, signIn } from '../helpers/identities.js';
import {
  context,
  expectProblem,
  renew,
  sessionRow,
  sessionsOf,
  sidOf,
  signOut,
  signOutEverywhere,
} from './support.js';

describe('sign-out and sign-out everywhere', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sign-out ends only the calling session; repeating it is 401', async () => {
    const person = await createPerson(t.ctx);
    const mine = await signIn(t.app, person);
    const sibling = await signIn(t.app, person);

    const res = await signOut(t.app, mine.accessToken);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');

    expectProblem(await renew(t.app, mine.refreshToken), 401, 'identity.renewal_refused');
    expectProblem(await context(t.app, mine.accessToken), 401, 'identity.session_required');
    expect((await sessionRow(t.db.database.db, sidOf(mine.accessToken))).revoked_reason).toBe('signed_out');

    // The other session of the identity keeps working, renewal included.
    expect((await context(t.app, sibling.accessToken)).statusCode).toBe(200);
    expect((await renew(t.app, sibling.refreshToken)).statusCode).toBe(201);

    expectProblem(await signOut(t.app, mine.accessToken), 401, 'identity.session_required');
  });

  it('sign-out everywhere ends every session of the identity, audits once, and leaves others alone', async () => {
    const person = await createPerson(t.ctx);
    const stranger = await createPerson(t.ctx);
    const grants = [await signIn(t.app, person), await signIn(t.app, person), await signIn(t.app, person)];
    const strangers = [await signIn(t.app, stranger), await signIn(t.app, stranger)];
    const db = t.db.database.db;

    const res = await signOutEverywhere(t.app, grants[1].accessToken);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');

    for (const g of grants) {
      expectProblem(await context(t.app, g.accessToken), 401, 'identity.session_required');
      expectProblem(await renew(t.app, g.refreshToken), 401, 'identity.renewal_refused');
    }
    for (const row of await sessionsOf(db, person.identityId)) {
      expect(row.revoked_at).not.toBeNull();
      expect(row.revoked_reason).toBe('signed_out_everywhere');
    }
    for (const g of strangers) expect((await context(t.app, g.accessToken)).statusCode).toBe(200);
    for (const row of await sessionsOf(db, stranger.identityId)) expect(row.revoked_at).toBeNull();

    const audit = await sql<{ name: string; actor: string; target: string; outcome: string }>`
      SELECT name, actor, target, outcome FROM audit_records
      WHERE name = 'identity.sessions.revoked_everywhere' AND (actor = ${person.identityId} OR target = ${person.identityId})`.execute(
      db,
    );
    expect(audit.rows).toEqual([
      {
        name: 'identity.sessions.revoked_everywhere',
        actor: person.identityId,
        target: person.identityId,
        outcome: 'success',
      },
    ]);

    expectProblem(await signOutEverywhere(t.app, grants[1].accessToken), 401, 'identity.session_required');
    // The refused repeat wrote nothing.
    const after = await sql<{ n: string }>`
      SELECT count(*) AS n FROM audit_records WHERE actor = ${person.identityId}`.execute(db);
    expect(Number(after.rows[0].n)).toBe(1);

    // A new sign-in after it works.
    const fresh = await signIn(t.app, person);
    expect((await context(t.app, fresh.accessToken)).statusCode).toBe(200);
  });

  it('sign-out everywhere with no other live session is not an error', async () => {
    const person = await createPerson(t.ctx);
    const only = await signIn(t.app, person);
    expect((await signOutEverywhere(t.app, only.accessToken)).statusCode).toBe(204);
    expectProblem(await context(t.app, only.accessToken), 401, 'identity.session_required');
  });

  it('the first revocation reason is kept', async () => {
    const person = await createPerson(t.ctx);
    const first = await signIn(t.app, person);
    const second = await signIn(t.app, person);
    expect((await signOut(t.app, first.accessToken)).statusCode).toBe(204);
    const before = await sessionRow(t.db.database.db, sidOf(first.accessToken));
    t.clock.advance(60);
    expect((await signOutEverywhere(t.app, second.accessToken)).statusCode).toBe(204);

    const kept = await sessionRow(t.db.database.db, sidOf(first.accessToken));
    expect(kept.revoked_reason).toBe('signed_out');
    expect(kept.revoked_at).toEqual(before.revoked_at);
    expect((await sessionRow(t.db.database.db, sidOf(second.accessToken))).revoked_reason).toBe(
      'signed_out_everywhere',
    );

    // A replay after a sign-out does not overwrite the reason either.
    const third = await signIn(t.app, person);
    expect((await signOut(t.app, third.accessToken)).statusCode).toBe(204);
    expectProblem(await renew(t.app, third.refreshToken), 401, 'identity.renewal_refused');
    expect((await sessionRow(t.db.database.db, sidOf(third.accessToken))).revoked_reason).toBe('signed_out');
  });
});

describe('sign-out of all other devices (POST /sign-outs/others)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });
  const others = (accessToken: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/others',
      headers: { authorization: `Bearer ${accessToken}` },
    });

  it('ends every other session of the identity; the caller and other identities keep theirs', async () => {
    const person = await createPerson(t.ctx);
    const stranger = await createPerson(t.ctx);
    const mine = await signIn(t.app, person);
    const laptop = await signIn(t.app, person);
    const phone = await signIn(t.app, person);
    const theirs = await signIn(t.app, stranger);

    const res = await others(mine.accessToken);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');

    expect((await context(t.app, mine.accessToken)).statusCode).toBe(200);
    expect((await renew(t.app, mine.refreshToken)).statusCode).toBe(201);
    for (const g of [laptop, phone]) {
      expectProblem(await context(t.app, g.accessToken), 401, 'identity.session_required');
      expectProblem(await renew(t.app, g.refreshToken), 401, 'identity.renewal_refused');
    }
    expect((await context(t.app, theirs.accessToken)).statusCode).toBe(200);
    const rows = await sessionsOf(t.ctx.database.db, person.identityId);
    // One clock instant: the rows' order among themselves is the ids', so compare them as a set.
    expect(rows.map((r) => r.revoked_reason ?? 'live').sort()).toEqual([
      'live',
      'signed_out_others',
      'signed_out_others',
    ]);

    const db = t.ctx.database.db;
    const audit = await sql<{ actor: string; target: string; details: unknown }>`
      SELECT actor, target, details FROM audit_records WHERE name = 'identity.sessions.revoked_others'
      AND actor = ${person.identityId}`.execute(db);
    expect(audit.rows).toEqual([
      { actor: person.identityId, target: person.identityId, details: { sessionsEnded: 2 } },
    ]);
    const events = await sql<{ session_id: string; reason: string }>`
      SELECT session_id, data->>'reason' AS reason FROM events
      WHERE identity_id = ${person.identityId} AND type = 'session.ended' ORDER BY session_id`.execute(db);
    expect(events.rows).toEqual(
      [sidOf(laptop.accessToken), sidOf(phone.accessToken)]
        .sort()
        .map((session_id) => ({ session_id, reason: 'signed_out_others' })),
    );

    // Nothing else live: still 204, and no session.ended.
    expect((await others(mine.accessToken)).statusCode).toBe(204);
    const after = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events
      WHERE identity_id = ${person.identityId} AND type = 'session.ended'`.execute(db);
    expect(after.rows[0].n).toBe(2);
  });

  it('without a live session: 401 identity.session_required', async () => {
    const person = await createPerson(t.ctx);
    const g = await signIn(t.app, person);
    expect((await signOut(t.app, g.accessToken)).statusCode).toBe(204);
    expectProblem(await others(g.accessToken), 401, 'identity.session_required');
  });
});

describe('two instances on one PostgreSQL database', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // Instances of one deployment share their configuration: the signing key is sealed with SECRETS_KEY.
    const env = { SECRETS_KEY: randomBytes(32).toString('base64') };
    a = await createTestApp({ server: true, env });
    b = await createTestApp({ db: a.db, env });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a token from A works on B, and a sign-out on A is refused by B at the very next request', async () => {
    const person = await createPerson(a.ctx);
    const grant = await signIn(a.app, person);
    expect((await context(b.app, grant.accessToken)).statusCode).toBe(200);
    expect((await context(a.app, grant.accessToken)).statusCode).toBe(200);

    expect((await signOut(a.app, grant.accessToken)).statusCode).toBe(204);
    expectProblem(await context(b.app, grant.accessToken), 401, 'identity.session_required');
    expectProblem(await renew(b.app, grant.refreshToken), 401, 'identity.renewal_refused');
  });

  it('a renewal on B rotates the token for A; sign-out everywhere on B is refused on A at once', async () => {
    const person = await createPerson(a.ctx);
    const first = await signIn(a.app, person);
    const renewed = await renew(b.app, first.refreshToken);
    expect(renewed.statusCode).toBe(201);
    const next = renewed.json().data;
    expect((await context(a.app, next.accessToken)).statusCode).toBe(200);

    const other = await signIn(b.app, person);
    expect((await context(a.app, other.accessToken)).statusCode).toBe(200);
    expect((await signOutEverywhere(b.app, other.accessToken)).statusCode).toBe(204);
    expectProblem(await context(a.app, next.accessToken), 401, 'identity.session_required');
    expectProblem(await context(a.app, other.accessToken), 401, 'identity.session_required');
  });
});
