import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordMethodId } from '../../src/features/sign-in-methods/password-method.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevated, elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { auditNames, post, shape } from '../passwords/support.js';
import { freshToken, PROVIDER, ProviderSink, providerSignIn, providerStepUp } from '../providers/support.js';
import {
  addMethod,
  identifierIdOf,
  insertVerifiedEmail,
  LAST_METHOD,
  listMethods,
  METHOD_NOT_FOUND,
  removeMethod,
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

function contextStatus(accessToken: string) {
  return t.app
    .inject({ method: 'GET', url: '/api/v1/session/context', headers: bearer(accessToken) })
    .then((r) => r.statusCode);
}

describe('POST /sign-in-methods/{id}/removals', () => {
  it('refuses to remove the last way in: the only identifier, or the password without a provider', async () => {
    const { person, headers } = await elevatedPerson(t);
    const emailId = await identifierIdOf(t.ctx, person.email);
    const onlyIdentifier = await removeMethod(t.app, headers, emailId);
    expect(onlyIdentifier.statusCode).toBe(409);
    expect(onlyIdentifier.json()).toEqual(LAST_METHOD);
    expect((await removeMethod(t.app, headers, passwordMethodId(person.identityId))).json()).toEqual(
      LAST_METHOD,
    );
    await signIn(t.app, person);
  });

  it('removes an identifier another way in does not need; other sessions end, the caller stays', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const other = await signIn(t.app, person);
    const spare = await insertVerifiedEmail(t.ctx, person.identityId);
    const emailId = await identifierIdOf(t.ctx, person.email);
    // A sign-in that read the epoch before the removal committed.
    const epoch = await sql<{ session_epoch: number }>`
      SELECT session_epoch FROM identities WHERE id = ${person.identityId}`.execute(t.ctx.database.db);

    const res = await removeMethod(t.app, headers, emailId);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await contextStatus(grant.accessToken)).toBe(200);
    expect(await contextStatus(other.accessToken)).toBe(401);
    const late = await t.ctx.sessions.openSession(
      person.identityId,
      epoch.rows[0].session_epoch,
      'password',
      {
        ip: null,
        userAgent: null,
      },
    );
    expect(await contextStatus(late.accessToken)).toBe(401);

    const gone = await post(t.app, '/sign-ins', {
      identifierType: 'email',
      identifier: person.email,
      password: person.password,
    });
    expect(gone.statusCode).toBe(401);
    await signIn(t.app, { email: spare.address, password: person.password });
    expect((await listMethods(t.app, grant.accessToken)).map((i) => i.id)).not.toContain(emailId);
    expect(await auditNames(t.ctx.database.db, 'identity.sign_in_method.removed', person.identityId)).toBe(1);

    // The same elevation serves several writes; the removed id is now like any unknown id.
    const again = await removeMethod(t.app, headers, emailId);
    expect(again.statusCode).toBe(404);
    expect(again.json()).toEqual(METHOD_NOT_FOUND);
    // The address is free again: someone else may register it.
    expect(
      (
        await post(t.app, '/sign-ups', {
          identifierType: 'email',
          identifier: person.email,
          password: 'newcomer-password-55',
        })
      ).statusCode,
    ).toBe(201);
  });

  it('answers unknown, foreign and removed ids with the identical 404, and 400 for a non-UUID', async () => {
    const { person, headers } = await elevatedPerson(t);
    const stranger = await createPerson(t.ctx);
    await insertVerifiedEmail(t.ctx, stranger.identityId);
    const unknown = await removeMethod(t.app, headers, randomUUID());
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual(METHOD_NOT_FOUND);
    const foreignIdentifier = await removeMethod(t.app, headers, await identifierIdOf(t.ctx, stranger.email));
    const foreignPassword = await removeMethod(t.app, headers, passwordMethodId(stranger.identityId));
    const identityIdItself = await removeMethod(t.app, headers, person.identityId);
    for (const res of [foreignIdentifier, foreignPassword, identityIdItself])
      expect(shape(res)).toEqual(shape(unknown));
    await signIn(t.app, stranger);

    const bad = await removeMethod(t.app, headers, 'not-a-uuid');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0]).toMatchObject({ location: 'path', field: 'id' });
    expect((await removeMethod(t.app, {}, randomUUID())).statusCode).toBe(401);
  });

  it('lets a linked provider stand in for the password, and then keeps the provider', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = `keep-${person.identityId}`;
    const linked = await addMethod(t.app, headers, {
      identifierType: 'provider',
      provider: PROVIDER,
      idToken: await freshToken(t.app, sink, t.clock, { sub }),
    });
    expect(linked.statusCode).toBe(201);
    const providerId = linked.json().data.id;

    expect((await removeMethod(t.app, headers, passwordMethodId(person.identityId))).statusCode).toBe(204);
    expect((await listMethods(t.app, grant.accessToken)).map((i) => i.kind).sort()).toEqual([
      'email',
      'provider',
    ]);
    const pw = await post(t.app, '/sign-ins', {
      identifierType: 'email',
      identifier: person.email,
      password: person.password,
    });
    expect(pw.statusCode).toBe(401);

    // An identifier without a password is no way in: the provider is now the last one.
    const last = await removeMethod(t.app, headers, providerId);
    expect(last.json()).toEqual(LAST_METHOD);
    // The identifier can go: the provider does not need it.
    expect((await removeMethod(t.app, headers, await identifierIdOf(t.ctx, person.email))).statusCode).toBe(
      204,
    );
    expect((await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }))).statusCode).toBe(
      201,
    );
  });

  it('removes a provider link when the password and an identifier remain; the subject then starts afresh', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = `drop-${person.identityId}`;
    const linked = await addMethod(t.app, headers, {
      identifierType: 'provider',
      provider: PROVIDER,
      idToken: await freshToken(t.app, sink, t.clock, { sub }),
    });
    const providerId = linked.json().data.id;
    expect((await removeMethod(t.app, headers, providerId)).statusCode).toBe(204);
    expect((await listMethods(t.app, grant.accessToken)).map((i) => i.kind).sort()).toEqual([
      'email',
      'password',
    ]);
    // The subject is no longer linked: a provider sign-in now makes a new identity.
    const fresh = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
    const ctx = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(fresh.json().data.accessToken),
    });
    expect(ctx.json().data.identityId).not.toBe(person.identityId);
  });

  it('refuses to remove the only provider of a provider-only identity', async () => {
    const sub = `solo-${randomUUID()}`;
    const grant = (await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }))).json().data;
    const up = await providerStepUp(
      t.app,
      grant.accessToken,
      await freshToken(t.app, sink, t.clock, { sub }),
    );
    expect(up.statusCode).toBe(201);
    const [item] = await listMethods(t.app, grant.accessToken);
    expect(item).toMatchObject({ kind: 'provider', display: PROVIDER });
    expect(item.lastUsedAt).toBe(t.clock.now().toISOString());
    const res = await removeMethod(
      t.app,
      elevated(grant.accessToken, up.json().data.elevationToken),
      item.id,
    );
    expect(res.json()).toEqual(LAST_METHOD);
  });
});
