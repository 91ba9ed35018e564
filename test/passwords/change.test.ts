import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import {
  auditNames,
  COMMON_PASSWORD,
  NEW_PASSWORD,
  PASSWORD_CHANGE_REFUSED,
  post,
  SESSION_REQUIRED,
  shape,
} from './support.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

function change(accessToken: string, body: object) {
  return post(t.app, '/password-changes', body, bearer(accessToken));
}

function context(accessToken: string) {
  return t.app.inject({ method: 'GET', url: '/api/v1/session/context', headers: bearer(accessToken) });
}

describe('POST /password-changes', () => {
  it('sets the new password, keeps the calling session and ends every other one', async () => {
    const person = await createPerson(t.ctx);
    const other = await signIn(t.app, person);
    const caller = await signIn(t.app, person);

    const res = await change(caller.accessToken, {
      currentPassword: person.password,
      newPassword: NEW_PASSWORD,
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');

    expect((await context(caller.accessToken)).statusCode).toBe(200);
    const dead = await context(other.accessToken);
    expect(dead.statusCode).toBe(401);
    expect(dead.json()).toEqual(SESSION_REQUIRED);
    const renewal = await post(t.app, '/sign-ins/renewals', { refreshToken: other.refreshToken });
    expect(renewal.statusCode).toBe(401);
    // The caller's refresh token still renews: its session moved to the new epoch.
    expect((await post(t.app, '/sign-ins/renewals', { refreshToken: caller.refreshToken })).statusCode).toBe(
      201,
    );

    const old = await post(t.app, '/sign-ins', {
      identifierType: 'email',
      identifier: person.email,
      password: person.password,
    });
    expect(old.statusCode).toBe(401);
    await signIn(t.app, { email: person.email, password: NEW_PASSWORD });

    expect(await auditNames(t.ctx.database.db, 'identity.password.changed', person.identityId)).toBe(1);
    const reasons = await sql<{ revoked_reason: string | null }>`
      SELECT revoked_reason FROM sessions WHERE identity_id = ${person.identityId}`.execute(
      t.ctx.database.db,
    );
    expect(reasons.rows.map((r) => r.revoked_reason).sort()).toEqual([null, null, 'password_changed']);
  });

  it('kills a sign-in that verified the old password while the change committed', async () => {
    const person = await createPerson(t.ctx);
    const caller = await signIn(t.app, person);
    // A sign-in read the epoch and verified the old password before the change...
    const before = await sql<{ session_epoch: number }>`
      SELECT session_epoch FROM identities WHERE id = ${person.identityId}`.execute(t.ctx.database.db);
    expect(
      (await change(caller.accessToken, { currentPassword: person.password, newPassword: NEW_PASSWORD }))
        .statusCode,
    ).toBe(204);
    // ...and its session is issued after the change committed: dead on arrival.
    const late = await t.ctx.sessions.openSession(
      person.identityId,
      before.rows[0].session_epoch,
      'password',
      { ip: null, userAgent: null },
    );
    expect((await context(late.accessToken)).statusCode).toBe(401);
    expect((await context(caller.accessToken)).statusCode).toBe(200);
  });

  it('answers every failure with the identical 422', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const wrong = await change(grant.accessToken, {
      currentPassword: `${person.password}x`,
      newPassword: NEW_PASSWORD,
    });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json()).toEqual(PASSWORD_CHANGE_REFUSED);

    // An identity whose password was removed (it signs in some other way): same refusal.
    const removed = await createPerson(t.ctx);
    const removedGrant = await signIn(t.app, removed);
    await sql`UPDATE identities SET password_hash = NULL WHERE id = ${removed.identityId}`.execute(
      t.ctx.database.db,
    );
    const none = await change(removedGrant.accessToken, {
      currentPassword: removed.password,
      newPassword: NEW_PASSWORD,
    });
    expect(shape(none)).toEqual(shape(wrong));

    // Nothing changed: the old password still signs in, the session still works.
    await signIn(t.app, person);
    expect((await context(grant.accessToken)).statusCode).toBe(200);
    expect(await auditNames(t.ctx.database.db, 'identity.password.changed', person.identityId)).toBe(0);
  });

  it('refuses a weak or out-of-bounds new password with 400 before checking the current one', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    for (const currentPassword of [person.password, 'certainly wrong']) {
      const res = await change(grant.accessToken, { currentPassword, newPassword: COMMON_PASSWORD });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors).toEqual([
        {
          location: 'body',
          field: 'newPassword',
          code: 'weak_password',
          message: expect.stringMatching(/^This password is too easy to guess\. \S/),
        },
      ]);
      expect(res.body).not.toContain(COMMON_PASSWORD);
    }
    // Built on the caller's own address: weak for this account.
    const own = await change(grant.accessToken, {
      currentPassword: person.password,
      newPassword: `${person.email}1`,
    });
    expect(own.json().errors[0]).toMatchObject({ field: 'newPassword', code: 'weak_password' });
    const short = await change(grant.accessToken, {
      currentPassword: person.password,
      newPassword: 'short-pass',
    });
    expect(short.statusCode).toBe(400);
    expect(short.body).not.toContain('short-pass');
    const extra = await change(grant.accessToken, {
      currentPassword: person.password,
      newPassword: NEW_PASSWORD,
      confirm: NEW_PASSWORD,
    });
    expect(extra.statusCode).toBe(400);
    const empty = await change(grant.accessToken, { currentPassword: '', newPassword: NEW_PASSWORD });
    expect(empty.statusCode).toBe(400);
    await signIn(t.app, person);
  });

  it('requires a session', async () => {
    const res = await post(t.app, '/password-changes', {
      currentPassword: 'whatever',
      newPassword: NEW_PASSWORD,
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(SESSION_REQUIRED);
  });
});
