import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import {
  auditNames,
  COMMON_PASSWORD,
  NEW_PASSWORD,
  otherCode,
  PASSWORD_RECOVERY_REFUSED,
  post,
  settle,
  shape,
} from './support.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const email = (address: string) => ({ identifierType: 'email', identifier: address });

function start(address: string) {
  return post(t.app, '/password-recoveries', email(address));
}

function confirm(address: string, code: string, newPassword = NEW_PASSWORD) {
  return post(t.app, '/password-recoveries/confirmations', { ...email(address), code, newPassword });
}

async function lockState(identityId: string) {
  const r = await sql<{ failed_attempts: number; locked_until: Date | null }>`
    SELECT failed_attempts, locked_until FROM identities WHERE id = ${identityId}`.execute(t.ctx.database.db);
  return r.rows[0];
}

describe('POST /password-recoveries', () => {
  it('answers the same bytes for a known and an unknown address and sends only to the known one', async () => {
    const person = await createPerson(t.ctx);
    const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
    const known = await start(person.email);
    const stranger = await start(unknown);
    expect(known.statusCode).toBe(201);
    expect(shape(stranger)).toEqual(shape(known));
    expect(known.json()).toEqual({
      data: { challengeExpiresAt: new Date(t.clock.now().getTime() + 900_000).toISOString() },
    });
    await waitForCode(t.config.dataDir, person.email, 1);
    await settle();
    expect(messagesTo(t.config.dataDir, unknown)).toEqual([]);
    expect(messagesTo(t.config.dataDir, person.email)[0].subject).toBe('Your password recovery code');
  });

  it('sends nothing to an address whose registration was never confirmed', async () => {
    const pending = `pending-${randomBytes(4).toString('hex')}@example.com`;
    const signUp = await post(t.app, '/sign-ups', { ...email(pending), password: 'pending-password-1234' });
    expect(signUp.statusCode).toBe(201);
    const before = messagesTo(t.config.dataDir, pending).length;
    expect((await start(pending)).statusCode).toBe(201);
    await settle();
    expect(messagesTo(t.config.dataDir, pending).length).toBe(before);
  });

  it('refuses an unusable address (shape only) and a malformed body', async () => {
    const res = await start('not an address');
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('identity.identifier_unusable');
    const phone = await post(t.app, '/password-recoveries', {
      identifierType: 'phone',
      identifier: '0612345678',
    });
    expect(phone.statusCode).toBe(400);
    const extra = await post(t.app, '/password-recoveries', { ...email('a@example.com'), password: 'x' });
    expect(extra.statusCode).toBe(400);
  });
});

describe('POST /password-recoveries/confirmations', () => {
  it('sets the password with the code and ends every session, the code is then spent', async () => {
    const person = await createPerson(t.ctx);
    const s1 = await signIn(t.app, person);
    const s2 = await signIn(t.app, person);
    await start(person.email);
    const code = await waitForCode(t.config.dataDir, person.email, 1);

    const res = await confirm(person.email, code);
    expect(res.statusCode).toBe(204);
    for (const s of [s1, s2]) {
      const ctx = await t.app.inject({
        method: 'GET',
        url: '/api/v1/session/context',
        headers: bearer(s.accessToken),
      });
      expect(ctx.statusCode).toBe(401);
      expect((await post(t.app, '/sign-ins/renewals', { refreshToken: s.refreshToken })).statusCode).toBe(
        401,
      );
    }
    const old = await post(t.app, '/sign-ins', { ...email(person.email), password: person.password });
    expect(old.statusCode).toBe(401);
    await signIn(t.app, { email: person.email, password: NEW_PASSWORD });
    expect(await auditNames(t.ctx.database.db, 'identity.password.recovered', person.identityId)).toBe(1);

    const replay = await confirm(person.email, code, 'another-fresh-password-9');
    expect(replay.json()).toEqual(PASSWORD_RECOVERY_REFUSED);
    await signIn(t.app, { email: person.email, password: NEW_PASSWORD });
  });

  it('answers every failure with the identical 422', async () => {
    const person = await createPerson(t.ctx);
    const other = await createPerson(t.ctx);
    await start(person.email);
    await start(other.email);
    const code = await waitForCode(t.config.dataDir, person.email, 1);
    const othersCode = await waitForCode(t.config.dataDir, other.email, 1);
    const baseline = await confirm(person.email, otherCode(code));
    expect(baseline.statusCode).toBe(422);
    expect(baseline.json()).toEqual(PASSWORD_RECOVERY_REFUSED);

    const causes = {
      'unknown address': await confirm(`nobody-${randomBytes(3).toString('hex')}@example.com`, code),
      'unusable address': await confirm('not an address', code),
      // Codes are random: in the rare draw where both are equal the cause cannot be told apart.
      "another address's code": othersCode === code ? baseline : await confirm(person.email, othersCode),
    };
    for (const [cause, res] of Object.entries(causes)) expect(shape(res), cause).toEqual(shape(baseline));

    t.clock.advance(901);
    expect(shape(await confirm(person.email, code))).toEqual(shape(baseline));
    await signIn(t.app, person);
  });

  it('counts wrong codes toward the lock, exhausts a code, and still admits a correct code while locked', async () => {
    const person = await createPerson(t.ctx);
    await start(person.email);
    const first = await waitForCode(t.config.dataDir, person.email, 1);
    for (let i = 0; i < 5; i++) expect((await confirm(person.email, otherCode(first))).statusCode).toBe(422);
    const state = await lockState(person.identityId);
    expect(state.locked_until).not.toBeNull();
    expect(await auditNames(t.ctx.database.db, 'identity.account.locked', person.identityId)).toBe(1);
    // The first code is exhausted: even the right one is refused now.
    expect((await confirm(person.email, first)).json()).toEqual(PASSWORD_RECOVERY_REFUSED);

    // A new code on the locked account still recovers it (the lock only stops guessing).
    await start(person.email);
    const second = await waitForCode(t.config.dataDir, person.email, 2);
    expect((await confirm(person.email, second)).statusCode).toBe(204);
    await signIn(t.app, { email: person.email, password: NEW_PASSWORD });
    expect(await auditNames(t.ctx.database.db, 'identity.account.locked', person.identityId)).toBe(1);
  });

  it('refuses a weak new password with 400 before any lookup', async () => {
    const res = await confirm('someone@example.com', '123456', COMMON_PASSWORD);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ field: 'newPassword', code: 'weak_password' });
    // In the bundled breach list: named as breached.
    const listed = await confirm('someone@example.com', '123456', 'unbelievable');
    expect(listed.json().errors[0]).toMatchObject({ field: 'newPassword', code: 'breached_password' });
    // Built on the address given: weak too, whether or not an account holds it.
    const own = await confirm('someone@example.com', '123456', 'someone@example.com1');
    expect(own.json().errors[0]).toMatchObject({ field: 'newPassword', code: 'weak_password' });
    expect(own.body).not.toContain('someone');
    const malformed = await confirm('someone@example.com', '12345', NEW_PASSWORD);
    expect(malformed.statusCode).toBe(400);
  });
});
