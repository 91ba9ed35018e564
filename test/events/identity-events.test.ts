import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { SoftAuthenticator } from '../helpers/authenticator.js';
import { elevate, elevated, elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson, type Grant, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { freshToken, ProviderSink, providerSignIn } from '../providers/support.js';
import { CONFIRMATIONS, emailForm, PASSWORD, SIGN_UPS, uniqueEmail } from '../registration/helpers.js';
import { DEFAULT_POLICY, post, totp, wrongCode } from '../second-factors/helpers.js';
import { addMethod, confirmMethod, identifierIdOf, removeMethod } from '../sign-in-methods/support.js';
import { admin } from './support.js';

/*
 * The events a person's acts (and the service's) emit about an identity and its sessions
 * (docs/events.md, issue 44): each through its real route, exactly one event of the type with the
 * right subject ids and `data`, never a secret in it; a refused act emits none.
 */

const ORIGIN = 'https://id.example';
const RP_ID = 'id.example';

let t: TestApp;
let sink: ProviderSink;
beforeAll(async () => {
  sink = await ProviderSink.start();
  t = await createTestApp({ admin: true, env: { PUBLIC_ORIGIN: ORIGIN, ...sink.env() } });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

interface Ev {
  type: string;
  actor: string | null;
  identityId: string | null;
  sessionId: string | null;
  data: Record<string, unknown>;
}

/** The identity's events, in the order they were appended (read straight from the table). */
async function eventsOf(identityId: string, type?: string): Promise<Ev[]> {
  const r = await sql<{
    type: string;
    actor: string | null;
    identity_id: string | null;
    session_id: string | null;
    data: Record<string, unknown> | string;
  }>`SELECT type, actor, identity_id, session_id, data FROM events
     WHERE identity_id = ${identityId} ORDER BY occurred_at, appended`.execute(t.ctx.database.db);
  return r.rows
    .map((e) => ({
      type: e.type,
      actor: e.actor,
      identityId: e.identity_id,
      sessionId: e.session_id,
      data: typeof e.data === 'string' ? JSON.parse(e.data) : e.data,
    }))
    .filter((e) => type === undefined || e.type === type);
}

/** Every key of a value, nested ones included. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)]);
  }
  return [];
}

/** No field that could hold a secret, and none of the given secrets anywhere in the events. */
function expectNoSecret(events: Ev[], ...secrets: string[]) {
  const keys = keysOf(events.map((e) => e.data));
  for (const k of keys) expect(k).not.toMatch(/password|hash|code|token|secret|credential|publicKey/i);
  const json = JSON.stringify(events);
  for (const s of secrets) expect(json).not.toContain(s);
}

/** The identity as the admin API lists it: the `data` of the identity events. */
async function listed(identityId: string) {
  const res = await admin(t, 'GET', `/identities/${identityId}`);
  expect(res.statusCode, res.body).toBe(200);
  const {
    id,
    createdAt,
    locale,
    givenName,
    familyName,
    displayName,
    name,
    identifiers,
    disabledAt,
    erasedAt,
  } = res.json().data;
  return {
    id,
    createdAt,
    locale,
    givenName,
    familyName,
    displayName,
    name,
    identifiers,
    disabledAt,
    erasedAt,
  };
}

async function sessionIdOf(grant: Grant): Promise<string> {
  const res = await t.app.inject({
    method: 'GET',
    url: '/api/v1/session/context',
    headers: bearer(grant.accessToken),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.sessionId as string;
}

async function identityOf(address: string): Promise<string> {
  const r = await sql<{ identity_id: string }>`
    SELECT identity_id FROM identifiers WHERE value = ${address} AND removed_at IS NULL`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].identity_id;
}

describe('identity.created', () => {
  it('a sign-up emits it once, at its confirmation; a refused confirmation emits nothing', async () => {
    const address = uniqueEmail('created');
    const started = await t.app.inject({
      method: 'POST',
      url: SIGN_UPS,
      payload: { ...emailForm(address), password: PASSWORD },
    });
    expect(started.statusCode, started.body).toBe(201);
    const identityId = await identityOf(address);
    // A registration not yet confirmed is no account: nothing yet.
    expect(await eventsOf(identityId)).toEqual([]);

    const code = await waitForCode(t.config.dataDir, address, 1);
    const wrong = await t.app.inject({
      method: 'POST',
      url: CONFIRMATIONS,
      payload: { ...emailForm(address), password: PASSWORD, code: code === '000000' ? '111111' : '000000' },
    });
    expect(wrong.statusCode).toBe(422);
    expect(await eventsOf(identityId)).toEqual([]);

    const ok = await t.app.inject({
      method: 'POST',
      url: CONFIRMATIONS,
      payload: { ...emailForm(address), password: PASSWORD, code },
    });
    expect(ok.statusCode, ok.body).toBe(204);
    const events = await eventsOf(identityId);
    expect(events.map((e) => e.type)).toEqual(['identity.created']);
    const [created] = events;
    expect(created).toMatchObject({ actor: identityId, identityId, sessionId: null });
    expect(created.data).toEqual({ ...(await listed(identityId)), via: 'sign_up' });
    expect((created.data.identifiers as Array<{ verifiedAt: string | null }>)[0].verifiedAt).not.toBeNull();
    expectNoSecret(events, PASSWORD, code);
  });

  it('a first sign-in with a provider ID token emits it once (a later one does not)', async () => {
    const sub = `events-${Date.now()}`;
    const token = await freshToken(t.app, sink, t.clock, { sub });
    const first = await providerSignIn(t.app, token);
    expect(first.statusCode, first.body).toBe(201);
    const grant = first.json().data as Grant;
    const identityId = (
      await t.app.inject({
        method: 'GET',
        url: '/api/v1/session/context',
        headers: bearer(grant.accessToken),
      })
    ).json().data.identityId as string;
    const created = await eventsOf(identityId, 'identity.created');
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ actor: identityId, identityId });
    expect(created[0].data).toEqual({ ...(await listed(identityId)), via: 'provider' });
    expect(await eventsOf(identityId, 'session.created')).toHaveLength(1);

    // The same token again is refused (its nonce is spent): nothing.
    expect((await providerSignIn(t.app, token)).statusCode).toBe(401);
    const again = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
    expect(again.statusCode, again.body).toBe(201);
    expect(await eventsOf(identityId, 'identity.created')).toHaveLength(1);
    expectNoSecret(await eventsOf(identityId), token, grant.refreshToken, grant.accessToken);
  });
});

describe('identity.updated', () => {
  it('an address added (its code confirmed) emits it; a wrong code nothing; its removal emits it again and ends the other session', async () => {
    const who = await elevatedPerson(t);
    const { identityId } = who.person;
    const other = await signIn(t.app, who.person);
    const otherId = await sessionIdOf(other);
    const before = (await eventsOf(identityId)).length;

    const address = uniqueEmail('added');
    const res = await addMethod(t.app, who.headers, { identifierType: 'email', identifier: address });
    expect(res.statusCode, res.body).toBe(201);
    const code = await waitForCode(t.config.dataDir, address, 1);
    const miss = await confirmMethod(t.app, who.headers, code === '000000' ? '111111' : '000000');
    expect(miss.statusCode).toBe(422);
    expect(await eventsOf(identityId)).toHaveLength(before);
    expect((await confirmMethod(t.app, who.headers, code)).statusCode).toBe(204);
    let updated = await eventsOf(identityId, 'identity.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0]).toMatchObject({ actor: identityId, identityId });
    expect(updated[0].data).toEqual(await listed(identityId));
    expect(JSON.stringify(updated[0].data)).toContain(address);

    const removal = await removeMethod(t.app, who.headers, await identifierIdOf(t.ctx, address));
    expect(removal.statusCode, removal.body).toBe(204);
    updated = await eventsOf(identityId, 'identity.updated');
    expect(updated).toHaveLength(2);
    expect(JSON.stringify(updated[1].data)).not.toContain(address);
    const ended = await eventsOf(identityId, 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0].sessionId).toBe(otherId);
    expect(ended[0]).toMatchObject({
      actor: identityId,
      data: { id: ended[0].sessionId, identityId, reason: 'sign_in_method_removed' },
    });
    expectNoSecret(await eventsOf(identityId), code, who.elevation, other.refreshToken);
  });

  it('a provider linked by ID token emits it', async () => {
    const who = await elevatedPerson(t);
    const { identityId } = who.person;
    const token = await freshToken(t.app, sink, t.clock, { sub: `link-${identityId}` });
    const res = await addMethod(t.app, who.headers, {
      identifierType: 'provider',
      provider: 'acme',
      idToken: token,
    });
    expect(res.statusCode, res.body).toBe(201);
    const updated = await eventsOf(identityId, 'identity.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0].data).toEqual(await listed(identityId));
    // The nonce is spent: the same token links nothing and emits nothing.
    expect(
      (await addMethod(t.app, who.headers, { identifierType: 'provider', provider: 'acme', idToken: token }))
        .statusCode,
    ).toBe(422);
    expect(await eventsOf(identityId, 'identity.updated')).toHaveLength(1);
    expectNoSecret(await eventsOf(identityId), token);
  });
});

describe('identity.password_changed', () => {
  it('a change emits it once and ends the other sessions (one session.ended each); a wrong current password nothing', async () => {
    const person = await createPerson(t.ctx);
    const caller = await signIn(t.app, person);
    const other = await signIn(t.app, person);
    const otherId = (
      await t.app.inject({
        method: 'GET',
        url: '/api/v1/session/context',
        headers: bearer(other.accessToken),
      })
    ).json().data.sessionId as string;
    const before = (await eventsOf(person.identityId)).length;
    const newPassword = 'lantern-orchard-velvet-73';

    const wrong = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      headers: bearer(caller.accessToken),
      payload: { currentPassword: 'not the password at all', newPassword },
    });
    expect(wrong.statusCode).toBe(422);
    expect(await eventsOf(person.identityId)).toHaveLength(before);

    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      headers: bearer(caller.accessToken),
      payload: { currentPassword: person.password, newPassword },
    });
    expect(res.statusCode, res.body).toBe(204);
    const changed = await eventsOf(person.identityId, 'identity.password_changed');
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({ actor: person.identityId, identityId: person.identityId });
    expect(changed[0].data).toEqual({ ...(await listed(person.identityId)), via: 'change' });
    const ended = await eventsOf(person.identityId, 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      sessionId: otherId,
      actor: person.identityId,
      data: { id: otherId, identityId: person.identityId, reason: 'password_changed' },
    });
    expectNoSecret(await eventsOf(person.identityId), person.password, newPassword);
  });

  it('a recovery emits it once and ends every session; a wrong code nothing', async () => {
    const person = await createPerson(t.ctx);
    await signIn(t.app, person);
    await signIn(t.app, person);
    const newPassword = 'harbour-quill-ember-58';
    const form = { identifierType: 'email', identifier: person.email };
    const sent = messagesTo(t.config.dataDir, person.email).length;
    const start = await t.app.inject({ method: 'POST', url: '/api/v1/password-recoveries', payload: form });
    expect(start.statusCode, start.body).toBe(201);
    const code = await waitForCode(t.config.dataDir, person.email, sent + 1);
    const before = (await eventsOf(person.identityId)).length;

    const wrong = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries/confirmations',
      payload: { ...form, code: code === '000000' ? '111111' : '000000', newPassword },
    });
    expect(wrong.statusCode).toBe(422);
    expect(await eventsOf(person.identityId)).toHaveLength(before);

    const ok = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries/confirmations',
      payload: { ...form, code, newPassword },
    });
    expect(ok.statusCode, ok.body).toBe(204);
    const changed = await eventsOf(person.identityId, 'identity.password_changed');
    expect(changed).toHaveLength(1);
    expect(changed[0].data).toEqual({ ...(await listed(person.identityId)), via: 'recovery' });
    const ended = await eventsOf(person.identityId, 'session.ended');
    expect(ended).toHaveLength(2);
    for (const e of ended)
      expect(e.data).toMatchObject({ identityId: person.identityId, reason: 'password_recovered' });
    expect(new Set(ended.map((e) => e.sessionId)).size).toBe(2);
    expectNoSecret(await eventsOf(person.identityId), person.password, newPassword, code);
  });
});

describe('identity.second_factor.added and .removed', () => {
  it('a confirmed enrolment emits added (not the pending one, not a wrong code); a removal emits removed', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const elevation = await elevate(t, grant.accessToken, person.email);
    const enrolled = await post(t.app, '/second-factors', {
      token: grant.accessToken,
      elevation,
      payload: { label: 'Phone' },
    });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    const factor = enrolled.json().data as { id: string; secret: string };
    expect(await eventsOf(person.identityId, 'identity.second_factor.added')).toEqual([]);
    const miss = await post(t.app, '/second-factors/confirmations', {
      token: grant.accessToken,
      payload: { code: wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now()) },
    });
    expect(miss.statusCode).toBe(403);
    expect(await eventsOf(person.identityId, 'identity.second_factor.added')).toEqual([]);
    const ok = await post(t.app, '/second-factors/confirmations', {
      token: grant.accessToken,
      payload: { code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()) },
    });
    expect(ok.statusCode, ok.body).toBe(204);
    t.clock.advance(DEFAULT_POLICY.period);
    const added = await eventsOf(person.identityId, 'identity.second_factor.added');
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({
      actor: person.identityId,
      identityId: person.identityId,
      data: { id: factor.id, identityId: person.identityId, type: 'totp', label: 'Phone', removedAt: null },
    });

    const again = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const removal = await t.app.inject({
      method: 'POST',
      url: `/api/v1/second-factors/${factor.id}/removals`,
      headers: elevated(grant.accessToken, again),
    });
    expect(removal.statusCode, removal.body).toBe(204);
    const removed = await eventsOf(person.identityId, 'identity.second_factor.removed');
    expect(removed).toHaveLength(1);
    expect(removed[0].data).toMatchObject({ id: factor.id, identityId: person.identityId });
    expect(removed[0].data.removedAt).not.toBeNull();
    // A second removal of the same factor is "not found": nothing more.
    const twice = await t.app.inject({
      method: 'POST',
      url: `/api/v1/second-factors/${factor.id}/removals`,
      headers: elevated(grant.accessToken, again),
    });
    expect(twice.statusCode).toBe(404);
    expect(await eventsOf(person.identityId, 'identity.second_factor.removed')).toHaveLength(1);
    // The second factor's removal ends no session.
    expect(await eventsOf(person.identityId, 'session.ended')).toEqual([]);
    expectNoSecret(await eventsOf(person.identityId), factor.secret);
  });
});

describe('identity.passkey.added and .removed', () => {
  it('a registration emits added; its removal emits removed and ends the other sessions', async () => {
    const who = await elevatedPerson(t);
    const { identityId } = who.person;
    const other = await signIn(t.app, who.person);
    const auth = new SoftAuthenticator(ORIGIN, RP_ID, false);
    const opts = await t.app.inject({
      method: 'POST',
      url: '/api/v1/passkeys/options',
      headers: who.headers,
      payload: {},
    });
    expect(opts.statusCode, opts.body).toBe(201);
    const credential = auth.create(opts.json().data.options);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/passkeys',
      headers: who.headers,
      payload: { credential, label: 'Laptop' } as object,
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().data.id as string;
    const added = await eventsOf(identityId, 'identity.passkey.added');
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({
      actor: identityId,
      identityId,
      data: { id, identityId, label: 'Laptop', removedAt: null },
    });
    // The same credential again is refused: nothing more.
    const opts2 = await t.app.inject({
      method: 'POST',
      url: '/api/v1/passkeys/options',
      headers: who.headers,
      payload: {},
    });
    const again = await t.app.inject({
      method: 'POST',
      url: '/api/v1/passkeys',
      headers: who.headers,
      payload: { credential: auth.create(opts2.json().data.options), label: 'Laptop' } as object,
    });
    expect(again.statusCode).not.toBe(201);
    expect(await eventsOf(identityId, 'identity.passkey.added')).toHaveLength(1);

    const removal = await removeMethod(t.app, who.headers, id);
    expect(removal.statusCode, removal.body).toBe(204);
    const removed = await eventsOf(identityId, 'identity.passkey.removed');
    expect(removed).toHaveLength(1);
    expect(removed[0].data).toMatchObject({ id, identityId });
    expect(removed[0].data.removedAt).not.toBeNull();
    // A passkey's removal is its own event, not identity.updated nor second_factor.removed.
    expect(await eventsOf(identityId, 'identity.updated')).toEqual([]);
    expect(await eventsOf(identityId, 'identity.second_factor.removed')).toEqual([]);
    const ended = await eventsOf(identityId, 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0].data.reason).toBe('sign_in_method_removed');
    expectNoSecret(await eventsOf(identityId), credential.id, other.refreshToken);
  });
});

describe('identity.locked', () => {
  it('the failure that trips the lock emits it once (actor: the service), with the reason', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const elevation = await elevate(t, grant.accessToken, person.email);
    const enrolled = await post(t.app, '/second-factors', { token: grant.accessToken, elevation });
    const factor = enrolled.json().data as { secret: string };
    for (let i = 0; i < 4; i++) {
      await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now()) },
      });
    }
    expect(await eventsOf(person.identityId, 'identity.locked')).toEqual([]);
    for (let i = 0; i < 2; i++) {
      await post(t.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now()) },
      });
    }
    const locked = await eventsOf(person.identityId, 'identity.locked');
    expect(locked).toHaveLength(1);
    expect(locked[0]).toMatchObject({ actor: null, identityId: person.identityId });
    const lock = locked[0].data.lock as { reason: string; route: string; lockedUntil: string };
    expect(lock).toMatchObject({ reason: 'too_many_failed_attempts', route: 'second-factors/confirmations' });
    expect(new Date(lock.lockedUntil).getTime()).toBeGreaterThan(t.clock.now().getTime());
    const { lock: _lock, ...identity } = locked[0].data;
    expect(identity).toEqual(await listed(person.identityId));
    expectNoSecret(locked, factor.secret);
  });
});

describe('session.ended by a person', () => {
  async function sessionOf(grant: Grant): Promise<string> {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(grant.accessToken),
    });
    return res.json().data.sessionId as string;
  }

  it('a sign-out ends its session (once); a sign-out everywhere ends each live one', async () => {
    const person = await createPerson(t.ctx);
    const a = await signIn(t.app, person);
    const b = await signIn(t.app, person);
    const c = await signIn(t.app, person);
    const [idA, idB, idC] = [await sessionOf(a), await sessionOf(b), await sessionOf(c)];
    const out = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs',
      headers: bearer(a.accessToken),
    });
    expect(out.statusCode, out.body).toBe(204);
    let ended = await eventsOf(person.identityId, 'session.ended');
    expect(ended).toEqual([
      {
        type: 'session.ended',
        actor: person.identityId,
        identityId: person.identityId,
        sessionId: idA,
        data: { id: idA, identityId: person.identityId, reason: 'signed_out' },
      },
    ]);
    // The ended session's token signs nothing out again.
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/sign-outs', headers: bearer(a.accessToken) }))
        .statusCode,
    ).toBe(401);
    expect(await eventsOf(person.identityId, 'session.ended')).toHaveLength(1);

    const all = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/everywhere',
      headers: bearer(b.accessToken),
    });
    expect(all.statusCode, all.body).toBe(204);
    ended = await eventsOf(person.identityId, 'session.ended');
    expect(ended).toHaveLength(3);
    expect(
      ended
        .slice(1)
        .map((e) => e.sessionId)
        .sort(),
    ).toEqual([idB, idC].sort());
    for (const e of ended.slice(1)) expect(e.data.reason).toBe('signed_out_everywhere');
    expectNoSecret(ended, a.refreshToken, b.refreshToken, c.refreshToken, a.accessToken);
  });

  it("an owner's revocation of one session ends it", async () => {
    const person = await createPerson(t.ctx);
    const a = await signIn(t.app, person);
    const b = await signIn(t.app, person);
    const idB = await sessionOf(b);
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/sessions/${idB}/revocations`,
      headers: bearer(a.accessToken),
    });
    expect(res.statusCode, res.body).toBe(204);
    const ended = await eventsOf(person.identityId, 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      sessionId: idB,
      actor: person.identityId,
      data: { reason: 'revoked_by_owner' },
    });
    const again = await t.app.inject({
      method: 'POST',
      url: `/api/v1/sessions/${idB}/revocations`,
      headers: bearer(a.accessToken),
    });
    expect(again.statusCode).toBe(404);
    expect(await eventsOf(person.identityId, 'session.ended')).toHaveLength(1);
  });

  it('a replayed refresh token ends the session (actor: the service); a rotation ends nothing', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const id = await sessionOf(grant);
    const renew = (refreshToken: string) =>
      t.app.inject({ method: 'POST', url: '/api/v1/sign-ins/renewals', payload: { refreshToken } });
    const rotated = await renew(grant.refreshToken);
    expect(rotated.statusCode, rotated.body).toBe(201);
    expect(await eventsOf(person.identityId, 'session.ended')).toEqual([]);
    const replay = await renew(grant.refreshToken);
    expect(replay.statusCode).toBe(401);
    const ended = await eventsOf(person.identityId, 'session.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      actor: null,
      sessionId: id,
      data: { id, identityId: person.identityId, reason: 'refresh_token_replayed' },
    });
    // A second replay finds the family ended already: nothing more.
    expect((await renew(grant.refreshToken)).statusCode).toBe(401);
    expect(await eventsOf(person.identityId, 'session.ended')).toHaveLength(1);
    expectNoSecret(ended, grant.refreshToken, rotated.json().data.refreshToken);
  });
});

describe('erasure', () => {
  it("redacts the identity's earlier events: their envelopes stay, no address is left", async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const changed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      headers: bearer(grant.accessToken),
      payload: { currentPassword: person.password, newPassword: 'quarry-lilac-bottle-61' },
    });
    expect(changed.statusCode, changed.body).toBe(204);
    const before = await eventsOf(person.identityId);
    expect(JSON.stringify(before)).toContain(person.email);

    const erased = await admin(t, 'POST', `/identities/${person.identityId}/erasures`);
    expect(erased.statusCode, erased.body).toBe(204);
    const after = await eventsOf(person.identityId);
    expect(after.slice(0, before.length)).toEqual(before.map((e) => ({ ...e, data: { redacted: true } })));
    expect(after.slice(before.length).map((e) => e.type)).toEqual(['session.ended', 'identity.erased']);
    expect(JSON.stringify(after)).not.toContain(person.email);
  });
});

describe('the pull API', () => {
  it('serves these events like any other', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    await t.app.inject({ method: 'POST', url: '/api/v1/sign-outs', headers: bearer(grant.accessToken) });
    const res = await admin(t, 'GET', '/events?types=session.ended&limit=100');
    expect(res.statusCode, res.body).toBe(200);
    const mine = (res.json().data as Ev[]).filter((e) => e.identityId === person.identityId);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ type: 'session.ended', data: { reason: 'signed_out' } });
  });
});
