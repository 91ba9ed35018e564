import { sql } from 'kysely';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IdentityClient,
  IdentityError,
  memoryStore,
  type SessionEvent,
  SessionManager,
} from '../../packages/client/src/index.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { lastCode, messagesTo, waitForCode } from '../helpers/outbox.js';

/**
 * The client against a real service over real HTTP (fetch to a loopback listener): every journey
 * a person makes, through the package's methods only; codes come from the development outbox.
 */
let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  // ACCOUNT_UI on: a sign-in code's message carries its link to the hosted pages.
  t = await createTestApp({ env: { ACCESS_TOKEN_TTL: '60', SIGN_IN_CODES: 'email', ACCOUNT_UI: 'on' } });
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  await t.app.listen({ host: '127.0.0.1', port });
});

afterAll(async () => {
  await t?.close();
});

async function sessionRow(sessionId: string) {
  const { rows } = await sql<{ generation: number; revoked_reason: string | null }>`
    SELECT generation, revoked_reason FROM sessions WHERE id = ${sessionId}`.execute(t.ctx.database.db);
  return rows[0];
}

describe('client against the service', () => {
  it('sign in with a code: sendSignInCode, then signInWithCode hands the grant to the session', async () => {
    const session = new SessionManager({ client: { baseUrl }, store: memoryStore() });
    const client = session.client;
    const identifier = 'code.client@example.com';
    const password = 'correct horse battery staple';
    await client.signUp({ identifierType: 'email', identifier, password });
    await client.confirmSignUp({
      identifierType: 'email',
      identifier,
      password,
      code: lastCode(t.config.dataDir, identifier),
    });

    const sent = await client.sendSignInCode({ identifierType: 'email', identifier });
    expect(Object.keys(sent).sort()).toEqual(['codeExpiresAt', 'signInCodeId']);
    const code = await waitForCode(t.config.dataDir, identifier, 2);
    const wrong = code === '000000' ? '111111' : '000000';
    const refused = await client
      .signInWithCode(sent.signInCodeId, { identifierType: 'email', identifier, code: wrong })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(IdentityError);
    expect((refused as IdentityError).code).toBe('identity.sign_in_refused');
    const result = await client.signInWithCode(sent.signInCodeId, {
      identifierType: 'email',
      identifier,
      code,
    });
    expect(result.kind).toBe('session');
    expect(await session.isSignedIn()).toBe(true);
    const history = await client.history({ limit: 1 });
    expect(history.items[0]).toMatchObject({ method: 'code', outcome: 'succeeded' });
  });

  it("sign in with a code's link: lookUpSignInLink shows the masked address, signInWithLink signs in", async () => {
    const session = new SessionManager({ client: { baseUrl }, store: memoryStore() });
    const client = session.client;
    const identifier = 'link.client@example.com';
    const password = 'correct horse battery staple';
    await client.signUp({ identifierType: 'email', identifier, password });
    await client.confirmSignUp({
      identifierType: 'email',
      identifier,
      password,
      code: lastCode(t.config.dataDir, identifier),
    });
    const sent = await client.sendSignInCode({ identifierType: 'email', identifier });
    await waitForCode(t.config.dataDir, identifier, 2);
    const token =
      messagesTo(t.config.dataDir, identifier)[1].text.match(/#\/sign-in\/link\/\S+\/(\S+)/)?.[1] ?? '';
    const link = { signInCodeId: sent.signInCodeId, token };
    // Node's fetch keeps no cookie: this is another browser than the one that asked.
    expect(await client.lookUpSignInLink(link)).toMatchObject({
      identifierType: 'email',
      maskedIdentifier: 'l***@example.com',
      sameBrowser: false,
    });
    const status = await client.signInCodeStatus(sent.signInCodeId).catch((e: unknown) => e);
    expect((status as IdentityError).code).toBe('identity.sign_in_refused');
    expect((await client.signInWithLink(link)).kind).toBe('session');
    expect(await session.isSignedIn()).toBe(true);
    const again = await client.signInWithLink(link).catch((e: unknown) => e);
    expect((again as IdentityError).code).toBe('identity.sign_in_refused');
  });

  it('sign up, confirm, sign in, context, renew (asked and on expiry), devices, sign out', async () => {
    const session = new SessionManager({ client: { baseUrl }, store: memoryStore() });
    const events: SessionEvent[] = [];
    session.onChange((e) => events.push(e));
    const client = session.client;
    const identifier = 'ada.client@example.com';
    const password = 'correct horse battery staple';

    const signUp = await client.signUp({ identifierType: 'email', identifier, password });
    expect(signUp.challengeDelivery.status).toBe('DELIVERED');
    expect(JSON.stringify(signUp)).not.toContain(identifier);
    const code = lastCode(t.config.dataDir, identifier);
    await client.confirmSignUp({ identifierType: 'email', identifier, password, code });

    const signedIn = await client.signIn({ identifierType: 'email', identifier, password });
    expect(signedIn.kind).toBe('session');
    expect(await session.isSignedIn()).toBe(true);

    const context = await client.context();
    expect(context.identifiers.map((i) => i.value)).toEqual(['a***@example.com']);
    const sessionId = context.sessionId;
    expect((await sessionRow(sessionId)).generation).toBe(1);

    // Renewal asked for: the refresh token rotates.
    const before = await session.grant();
    const renewed = await session.renew();
    expect(renewed?.refreshToken).not.toBe(before?.refreshToken);
    expect((await sessionRow(sessionId)).generation).toBe(2);

    // The access token expires at the service (its clock moves 61 s; this machine's does not): the
    // next call is refused with 401, renews once, and is answered.
    t.clock.advance(61);
    expect((await client.context()).sessionId).toBe(sessionId);
    expect((await sessionRow(sessionId)).generation).toBe(3);

    const devices = await client.listSessions({ limit: 10 });
    expect(devices.items).toHaveLength(1);
    expect(devices.items[0]).toMatchObject({ id: sessionId, current: true });
    expect(devices.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
    const history = await client.history({ limit: 1 });
    expect(history.items[0]).toMatchObject({ method: 'password', outcome: 'succeeded' });

    const lastAccess = (await session.grant())?.accessToken as string;
    await client.signOut();
    expect(await session.isSignedIn()).toBe(false);
    expect(events.map((e) => `${e.status}:${e.reason}`)).toEqual([
      'signed-in:sign-in',
      'signed-in:renewal',
      'signed-in:renewal',
      'signed-out:signed_out',
    ]);
    await expect(client.context()).rejects.toMatchObject({ code: 'client.signed_out' });
    const refused = await client.context({ accessToken: lastAccess }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(IdentityError);
    expect(refused).toMatchObject({ code: 'identity.session_required', status: 401, retryable: false });
    expect((await sessionRow(sessionId)).revoked_reason).not.toBe('refresh_token_replayed');
    session.close();
  });

  it('step-up, an elevated write, the export, and ending this device from the device list', async () => {
    const identifier = 'grace.client@example.com';
    const password = 'another correct horse';
    const anonymous = new IdentityClient({ baseUrl });
    await anonymous.signUp({ identifierType: 'email', identifier, password });
    await anonymous.confirmSignUp({
      identifierType: 'email',
      identifier,
      password,
      code: lastCode(t.config.dataDir, identifier),
    });
    const session = new SessionManager({ client: new IdentityClient({ baseUrl }), store: memoryStore() });
    await session.client.signIn({ identifierType: 'email', identifier, password });

    await expect(session.client.issueRecoveryCodes('not-an-elevation')).rejects.toMatchObject({
      code: 'identity.elevation_required',
      status: 403,
    });
    const challenge = await session.client.stepUp({ channel: 'identifier' });
    const stepCode = await waitForCode(t.config.dataDir, identifier, 2);
    const { elevationToken } = await session.client.confirmStepUp({
      challengeId: challenge.challengeId,
      code: stepCode,
    });
    const batch = await session.client.issueRecoveryCodes(elevationToken);
    expect(batch.recoveryCodes).toHaveLength(10);
    expect((await session.client.recoveryCodeStatus()).remaining).toBe(10);

    const exported = await session.client.exportAccount();
    expect(exported.identifiers.map((i) => i.value)).toEqual([identifier]);
    const overview = await session.client.getAccount();
    expect(overview.identifiers.map((i) => i.value)).toEqual([identifier]);
    expect(overview.recoveryCodes.remaining).toBe(10);
    // The name (issue 46, item 3): set, shown, cleared through the typed method.
    const named = await session.client.updateAccount({ givenName: ' Ada ', familyName: 'Lovelace' });
    expect(named).toMatchObject({
      givenName: 'Ada',
      familyName: 'Lovelace',
      displayName: null,
      name: 'Ada Lovelace',
    });
    await expect(session.client.updateAccount({ displayName: 'x'.repeat(101) })).rejects.toMatchObject({
      code: 'validation.failed',
    });
    expect((await session.client.updateAccount({ givenName: null })).name).toBe('Lovelace');
    // The picture: bytes as they are (a Blob's own type), judged by content.
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();
    const pictured = await session.client.setPicture(new Blob([new Uint8Array(png)], { type: 'image/png' }));
    expect(pictured.picture).toMatch(/\/api\/v1\/pictures\/[0-9a-f-]{36}$/);
    await expect(
      session.client.setPicture(new TextEncoder().encode('not an image'), { contentType: 'image/png' }),
    ).rejects.toMatchObject({ status: 422, code: 'identity.picture_unusable' });
    await session.client.removePicture();
    expect((await session.client.getAccount()).picture).toBeNull();

    // Ending this device's own session from the device list signs the manager out too.
    const { sessionId } = await session.client.context();
    await session.client.revokeSession(sessionId);
    expect(await session.isSignedIn()).toBe(false);
    await expect(
      session.client.revokeSession(sessionId, { accessToken: 'not-a-token' }),
    ).rejects.toMatchObject({ code: 'identity.session_required' });
    session.close();
  });

  it('signOutOthers keeps this device; deleteAccount refuses a wrong identifier, then deletes and signs out', async () => {
    const identifier = 'leaving.client@example.com';
    const password = 'a leaving correct horse';
    const anonymous = new IdentityClient({ baseUrl });
    await anonymous.signUp({ identifierType: 'email', identifier, password });
    await anonymous.confirmSignUp({
      identifierType: 'email',
      identifier,
      password,
      code: lastCode(t.config.dataDir, identifier),
    });
    const other = new SessionManager({ client: new IdentityClient({ baseUrl }), store: memoryStore() });
    await other.client.signIn({ identifierType: 'email', identifier, password });
    const session = new SessionManager({ client: new IdentityClient({ baseUrl }), store: memoryStore() });
    const events: SessionEvent[] = [];
    session.onChange((e) => events.push(e));
    await session.client.signIn({ identifierType: 'email', identifier, password });

    await session.client.signOutOthers();
    expect(await session.isSignedIn()).toBe(true);
    await expect(other.client.context()).rejects.toMatchObject({ code: 'identity.session_required' });

    const challenge = await session.client.stepUp({ channel: 'identifier' });
    const { elevationToken } = await session.client.confirmStepUp({
      challengeId: challenge.challengeId,
      code: await waitForCode(t.config.dataDir, identifier, 2),
    });
    await expect(
      session.client.deleteAccount(elevationToken, 'someone.else@example.com'),
    ).rejects.toMatchObject({ code: 'identity.account_deletion_refused', status: 422 });
    expect(await session.isSignedIn()).toBe(true);
    await session.client.deleteAccount(elevationToken, identifier);
    expect(await session.isSignedIn()).toBe(false);
    expect(events.at(-1)).toEqual({ status: 'signed-out', reason: 'account_deleted' });
    await expect(anonymous.signIn({ identifierType: 'email', identifier, password })).rejects.toMatchObject({
      code: 'identity.sign_in_refused',
    });
    session.close();
    other.close();
  });

  it('a refusal is an IdentityError with the Problem Details and the request id', async () => {
    const client = new IdentityClient({ baseUrl });
    const error = await client
      .signIn({ identifierType: 'email', identifier: 'nobody@example.com', password: 'wrong password' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdentityError);
    expect(error).toMatchObject({
      code: 'identity.sign_in_refused',
      status: 401,
      retryable: false,
      errors: [],
    });
    expect((error as IdentityError).requestId).toMatch(/^[0-9a-f-]{36}$/);

    const invalid = await client
      .signUp({ identifierType: 'email', identifier: 'x@example.com', password: 'short' })
      .catch((e: unknown) => e);
    expect(invalid).toMatchObject({ code: 'validation.failed', status: 400 });
    expect((invalid as IdentityError).errors.length).toBeGreaterThan(0);
  });
});
