import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordMethodId } from '../../src/features/sign-in-methods/password-method.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate, elevated, elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { auditNames, NEW_PASSWORD, otherCode, post, shape } from '../passwords/support.js';
import {
  freshToken,
  idToken,
  issueNonce,
  nonceHash,
  PROVIDER,
  ProviderSink,
  providerSignIn,
} from '../providers/support.js';
import {
  addEmail,
  addMethod,
  CONFIRMATION_REFUSED,
  confirmMethod,
  ELEVATION_REQUIRED,
  IDENTIFIER_TAKEN,
  listMethods,
  METHOD_LOCKED,
  removeMethod,
  uniqueEmail,
} from './support.js';

let t: TestApp;
let sink: ProviderSink;

beforeAll(async () => {
  sink = await ProviderSink.start();
  t = await createTestApp({ env: sink.env() });
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

async function lockOf(identityId: string) {
  const r = await sql<{ failed_attempts: number; locked_until: Date | null }>`
    SELECT failed_attempts, locked_until FROM identities WHERE id = ${identityId}`.execute(t.ctx.database.db);
  return r.rows[0];
}

describe('GET /sign-in-methods', () => {
  it('lists verified methods, masked, with a stable derived id for the password', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const items = await listMethods(t.app, grant.accessToken);
    const pwId = passwordMethodId(person.identityId);
    expect(pwId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(pwId).not.toBe(person.identityId);
    expect(items.map((i) => i.kind).sort()).toEqual(['email', 'password']);
    const email = items.find((i) => i.kind === 'email')!;
    expect(email.display).toBe(`${person.email[0]}***@example.com`);
    expect(email.lastUsedAt).toBeNull();
    const password = items.find((i) => i.kind === 'password')!;
    expect(password).toEqual({
      id: pwId,
      kind: 'password',
      display: null,
      verifiedAt: t.clock.now().toISOString(),
      lastUsedAt: t.clock.now().toISOString(),
    });
    expect(JSON.stringify(items)).not.toContain(person.email);

    // The id survives a password change.
    t.clock.advance(5);
    expect(
      (
        await post(
          t.app,
          '/password-changes',
          { currentPassword: person.password, newPassword: NEW_PASSWORD },
          bearer(grant.accessToken),
        )
      ).statusCode,
    ).toBe(204);
    const after = (await listMethods(t.app, grant.accessToken)).find((i) => i.kind === 'password')!;
    expect(after.id).toBe(pwId);
    expect(after.verifiedAt).toBe(t.clock.now().toISOString());
  });

  it('pages with a signed cursor bound to the caller and refuses unknown parameters', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    t.clock.advance(1);
    await addEmail(t, headers);
    const first = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-in-methods?limit=2',
      headers: bearer(grant.accessToken),
    });
    expect(first.statusCode).toBe(200);
    const body = first.json();
    expect(body.data).toHaveLength(2);
    expect(body.meta.pageInfo.hasNextPage).toBe(true);
    const second = await t.app.inject({
      method: 'GET',
      url: `/api/v1/sign-in-methods?limit=2&after=${body.meta.pageInfo.nextCursor}`,
      headers: bearer(grant.accessToken),
    });
    expect(second.json().meta.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
    const all = [...body.data, ...second.json().data];
    expect(all).toHaveLength(3);
    expect(new Set(all.map((i: { id: string }) => i.id)).size).toBe(3);
    // Newest first: the added address came last.
    expect(all[0].kind).toBe('email');
    expect(all[0].display).not.toBe(`${person.email[0]}***@example.com`);

    const stranger = await signIn(t.app, await createPerson(t.ctx));
    const foreign = await t.app.inject({
      method: 'GET',
      url: `/api/v1/sign-in-methods?after=${body.meta.pageInfo.nextCursor}`,
      headers: bearer(stranger.accessToken),
    });
    expect(foreign.json().code).toBe('collection.cursor_invalid');
    const sorted = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-in-methods?sort=kind',
      headers: bearer(grant.accessToken),
    });
    expect(sorted.statusCode).toBe(400);
    const anonymous = await t.app.inject({ method: 'GET', url: '/api/v1/sign-in-methods' });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('POST /sign-in-methods (identifier form) and confirmations', () => {
  it('sends a code, and the code verifies the new address for the caller', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const address = uniqueEmail('new');
    const res = await addMethod(t.app, headers, { identifierType: 'email', identifier: address });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      data: {
        challengeExpiresAt: new Date(t.clock.now().getTime() + 900_000).toISOString(),
        challengeDelivery: { status: 'DELIVERED', resendable: false },
      },
    });
    const code = await waitForCode(t.config.dataDir, address, 1);
    // Nothing is attached before the code comes back.
    expect((await listMethods(t.app, grant.accessToken)).map((i) => i.kind).sort()).toEqual([
      'email',
      'password',
    ]);

    expect((await confirmMethod(t.app, headers, code.toLowerCase())).statusCode).toBe(204);
    const items = await listMethods(t.app, grant.accessToken);
    expect(items.filter((i) => i.kind === 'email')).toHaveLength(2);
    expect(await auditNames(t.ctx.database.db, 'identity.sign_in_method.verified', person.identityId)).toBe(
      1,
    );
    // The new address signs in with the identity's password.
    await signIn(t.app, { email: address, password: person.password });
    // A replayed code is refused.
    expect((await confirmMethod(t.app, headers, code)).json()).toEqual(CONFIRMATION_REFUSED);
  });

  it('needs a session and an elevation of this session', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const body = { identifierType: 'email', identifier: uniqueEmail() };
    expect((await addMethod(t.app, {}, body)).statusCode).toBe(401);
    const noElevation = await addMethod(t.app, bearer(grant.accessToken), body);
    expect(noElevation.statusCode).toBe(403);
    expect(noElevation.json()).toEqual(ELEVATION_REQUIRED);
    // An elevation minted for another session of the same identity.
    const second = await signIn(t.app, person);
    const othersElevation = await elevate(t, second.accessToken, person.email);
    const foreign = await confirmMethod(t.app, elevated(grant.accessToken, othersElevation), '123456');
    expect(foreign.json()).toEqual(ELEVATION_REQUIRED);
    expect(
      (await removeMethod(t.app, elevated(grant.accessToken, othersElevation), randomUUID())).json(),
    ).toEqual(ELEVATION_REQUIRED);
    expect((await confirmMethod(t.app, bearer(grant.accessToken), '123456')).statusCode).toBe(403);
    for (const bad of [
      { ...body, extra: 1 },
      { identifierType: 'phone', identifier: '0612345678' },
      { identifierType: 'email', identifier: 'a@example.com', country: 'FR' },
      { identifierType: 'provider', provider: 'acme' },
      { identifierType: 'provider', provider: 'acme', idToken: 'a.b.c', country: 'FR' },
      { identifierType: 'email', identifier: 'a@example.com', idToken: 'a.b.c' },
      { identifierType: 'passkey', identifier: 'a@example.com' },
    ]) {
      expect((await addMethod(t.app, headers, bad)).statusCode, JSON.stringify(bad)).toBe(400);
    }
    const phone = await addMethod(t.app, headers, {
      identifierType: 'phone',
      identifier: '06 12 34 56 78',
      country: 'FR',
    });
    expect(phone.statusCode).toBe(201);
    expect(
      (await addMethod(t.app, headers, { identifierType: 'email', identifier: 'nope' })).json().code,
    ).toBe('identity.identifier_unusable');
  });

  it('refuses an address verified by anyone with 409, and claims one only pending elsewhere', async () => {
    const { person, headers } = await elevatedPerson(t);
    const owner = await createPerson(t.ctx);
    const taken = await addMethod(t.app, headers, { identifierType: 'email', identifier: owner.email });
    expect(taken.statusCode).toBe(409);
    expect(taken.json()).toEqual(IDENTIFIER_TAKEN);
    const own = await addMethod(t.app, headers, {
      identifierType: 'email',
      identifier: person.email.toUpperCase(),
    });
    expect(own.json()).toEqual(IDENTIFIER_TAKEN);

    // A stranger's registration that was never confirmed does not block the address...
    const pending = uniqueEmail('pending');
    expect(
      (
        await post(t.app, '/sign-ups', {
          identifierType: 'email',
          identifier: pending,
          password: 'squatter-password-77',
        })
      ).statusCode,
    ).toBe(201);
    const signUpCode = await waitForCode(t.config.dataDir, pending, 1);
    const claim = await addMethod(t.app, headers, { identifierType: 'email', identifier: pending });
    expect(claim.statusCode).toBe(201);
    const code = await waitForCode(t.config.dataDir, pending, 2);
    expect((await confirmMethod(t.app, headers, code)).statusCode).toBe(204);
    // ...and once the caller proved it, the stranger's code no longer confirms anything.
    const late = await post(t.app, '/sign-ups/confirmations', {
      identifierType: 'email',
      identifier: pending,
      password: 'squatter-password-77',
      code: signUpCode,
    });
    expect(late.statusCode).toBe(422);
    await signIn(t.app, { email: pending, password: person.password });
  });

  it('answers a wrong, absent, replayed or foreign code with the identical 422', async () => {
    const a = await elevatedPerson(t);
    const b = await elevatedPerson(t);
    const noChallenge = await confirmMethod(t.app, a.headers, '123456');
    expect(noChallenge.statusCode).toBe(422);
    expect(noChallenge.json()).toEqual(CONFIRMATION_REFUSED);

    const aAddress = uniqueEmail('a');
    const bAddress = uniqueEmail('b');
    await addMethod(t.app, a.headers, { identifierType: 'email', identifier: aAddress });
    await addMethod(t.app, b.headers, { identifierType: 'email', identifier: bAddress });
    const aCode = await waitForCode(t.config.dataDir, aAddress, 1);
    const bCode = await waitForCode(t.config.dataDir, bAddress, 1);
    const wrong = await confirmMethod(t.app, a.headers, otherCode(aCode));
    expect(shape(wrong)).toEqual(shape(noChallenge));
    if (bCode !== aCode)
      expect(shape(await confirmMethod(t.app, a.headers, bCode))).toEqual(shape(noChallenge));
    // b's challenge is untouched by a's guesses: b's code still works for b, once.
    expect((await confirmMethod(t.app, b.headers, bCode)).statusCode).toBe(204);
    expect(shape(await confirmMethod(t.app, b.headers, bCode))).toEqual(shape(noChallenge));
    // An expired challenge is refused too (a new session and elevation: those expired as well).
    const c = await elevatedPerson(t);
    const cAddress = uniqueEmail('c');
    await addMethod(t.app, c.headers, { identifierType: 'email', identifier: cAddress });
    const cCode = await waitForCode(t.config.dataDir, cAddress, 1);
    t.clock.advance(901);
    const again = await signIn(t.app, c.person);
    const headers = elevated(again.accessToken, await elevate(t, again.accessToken, c.person.email));
    expect(shape(await confirmMethod(t.app, headers, cCode))).toEqual(shape(noChallenge));
  });

  it('locks after five failures (audited once), answers 423 after, and a correct code still succeeds and clears it', async () => {
    const { person, headers } = await elevatedPerson(t);
    const first = uniqueEmail('l1');
    await addMethod(t.app, headers, { identifierType: 'email', identifier: first });
    const firstCode = await waitForCode(t.config.dataDir, first, 1);
    const wrong = otherCode(firstCode);
    for (let i = 0; i < 4; i++)
      expect((await confirmMethod(t.app, headers, wrong)).json()).toEqual(CONFIRMATION_REFUSED);

    // A second challenge, started before the lock trips, is the one that will still be live.
    const second = uniqueEmail('l2');
    await addMethod(t.app, headers, { identifierType: 'email', identifier: second });
    const secondCode = await waitForCode(t.config.dataDir, second, 1);
    const miss = secondCode === wrong ? otherCode(wrong) : wrong;
    // The fifth failure trips the lock and is still the ordinary refusal...
    expect((await confirmMethod(t.app, headers, miss)).json()).toEqual(CONFIRMATION_REFUSED);
    expect((await lockOf(person.identityId)).locked_until).not.toBeNull();
    expect(await auditNames(t.ctx.database.db, 'identity.account.locked', person.identityId)).toBe(1);
    // ...every later miss on the locked account is 423.
    for (let i = 0; i < 2; i++) {
      const locked = await confirmMethod(t.app, headers, miss);
      expect(locked.statusCode).toBe(423);
      expect(locked.json()).toEqual(METHOD_LOCKED);
    }
    expect(await auditNames(t.ctx.database.db, 'identity.account.locked', person.identityId)).toBe(1);
    // The first challenge was charged five times: exhausted, even with its right code.
    expect((await confirmMethod(t.app, headers, firstCode)).statusCode).toBe(423);

    const ok = await confirmMethod(t.app, headers, secondCode);
    expect(ok.statusCode).toBe(204);
    expect(await lockOf(person.identityId)).toEqual({ failed_attempts: 0, locked_until: null });
    expect(messagesTo(t.config.dataDir, first)).toHaveLength(1);
  });
});

describe('POST /sign-in-methods (provider form)', () => {
  it('links a provider at once; the provider then signs the same identity in', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = `linked-${person.identityId}`;
    const token = await freshToken(t.app, sink, t.clock, { sub });
    const res = await addMethod(t.app, headers, {
      identifierType: 'provider',
      provider: PROVIDER,
      idToken: token,
    });
    expect(res.statusCode).toBe(201);
    const { id } = res.json().data;
    const item = (await listMethods(t.app, grant.accessToken)).find((i) => i.kind === 'provider');
    expect(item).toMatchObject({ id, display: PROVIDER, lastUsedAt: null });

    const signed = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
    expect(signed.statusCode).toBe(201);
    const ctx = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(signed.json().data.accessToken),
    });
    expect(ctx.json().data.identityId).toBe(person.identityId);
    expect(ctx.json().data.methods).toContain('provider');

    // The subject is now taken, by anyone; the token itself cannot be replayed either.
    const other = await elevatedPerson(t);
    const again = await addMethod(t.app, other.headers, {
      identifierType: 'provider',
      provider: PROVIDER,
      idToken: await freshToken(t.app, sink, t.clock, { sub }),
    });
    expect(again.json()).toEqual(IDENTIFIER_TAKEN);
    const replay = await addMethod(t.app, other.headers, {
      identifierType: 'provider',
      provider: PROVIDER,
      idToken: token,
    });
    expect(replay.json()).toEqual(CONFIRMATION_REFUSED);
  });

  it('refuses a token the verifier refuses or whose nonce is not live with the identical 422', async () => {
    const { headers } = await elevatedPerson(t);
    const { nonce } = await issueNonce(t.app);
    const causes = [
      { provider: 'nobody', idToken: await freshToken(t.app, sink, t.clock) },
      { provider: PROVIDER, idToken: await freshToken(t.app, sink, t.clock, { aud: 'someone-else' }) },
      { provider: PROVIDER, idToken: await idToken(sink, t.clock, { nonce: nonceHash(`${nonce}x`) }) },
      { provider: PROVIDER, idToken: await idToken(sink, t.clock, { nonce: null }) },
    ];
    for (const c of causes) {
      const res = await addMethod(t.app, headers, { identifierType: 'provider', ...c });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual(CONFIRMATION_REFUSED);
    }
    const mixed = await addMethod(t.app, headers, {
      identifierType: 'provider',
      provider: PROVIDER,
      idToken: 'a.b.c',
      identifier: 'x@example.com',
    });
    expect(mixed.statusCode).toBe(400);
  });
});
