import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { countStatements, statementsOf } from '../helpers/statements.js';
import { createOrganization, member, switchTo } from '../organizations/support.js';
import { context, signOut } from './support.js';

/*
 * The session read an application makes on every page (GET /session/context, issue 43) is one
 * statement: the session's state, the identity's summary, the active organization and the
 * memberships, read together (`sessionContext`, docs/performance.md, "Authenticated GET"). Nothing
 * of it is kept between requests: two instances on one database, a session ended on A is refused
 * by B at its very next read, after B has served it.
 */
describe('the session read: one statement, refused at once on another instance', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp({
      db: a.db,
      clock: a.clock,
      env: { SECRETS_KEY: a.config.secretsKey.toString('base64') },
      extend: countStatements,
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('answers the caller, the active organization and every membership in one statement', async () => {
    const me = await member(a);
    const first = await createOrganization(a, me.token, 'First');
    a.clock.advance(1);
    const second = await createOrganization(a, me.token, 'Second');

    const plain = await statementsOf(() => context(b.app, me.token));
    expect(plain.result.statusCode, plain.result.body).toBe(200);
    const data = plain.result.json().data;
    expect(data.identityId).toBe(me.person.identityId);
    expect(data.organizations.map((o: { id: string }) => o.id)).toEqual([second.id, first.id]);
    expect(plain.statements).toHaveLength(1);

    // With an organization active, its membership is read in the same statement.
    const switched = await switchTo(a.app, me.token, first.id);
    expect(switched.statusCode, switched.body).toBe(200);
    const active = await statementsOf(() => context(b.app, switched.json().data.accessToken));
    expect(active.result.statusCode, active.result.body).toBe(200);
    expect(
      active.result.json().data.organizations.map((o: { id: string; active: boolean }) => [o.id, o.active]),
    ).toEqual([
      [second.id, false],
      [first.id, true],
    ]);
    expect(active.statements).toHaveLength(1);
  });

  it('refuses a session ended on the other instance at the next read, in the same one statement', async () => {
    const me = await member(a);
    expect((await context(b.app, me.token)).statusCode).toBe(200);
    expect((await signOut(a.app, me.token)).statusCode).toBe(204);
    const after = await statementsOf(() => context(b.app, me.token));
    expect(after.result.statusCode).toBe(401);
    expect(after.statements).toHaveLength(1);
  });
});
