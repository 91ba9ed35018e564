import * as client from 'openid-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newSecret } from '../../src/features/events/webhooks/signing.js';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { SoftAuthenticator } from '../helpers/authenticator.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { hookEnv, type Receiver, startReceiver } from '../helpers/hooks.js';
import { createPerson } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import {
  appEnv,
  exchange,
  expectError,
  footprint,
  handoffOf,
  linkedTo,
  redirectEntry,
  SIGN_UP_PAGE,
  trip,
  upstreamClient,
} from '../providers/redirect-support.js';
import { freshToken, ProviderSink, providerSignIn } from '../providers/support.js';
import { emailForm, PASSWORD, signUp, uniqueEmail } from '../registration/helpers.js';

/**
 * Synchronous hooks (docs/events.md, "Synchronous hooks"): a real receiver on loopback verifies
 * every call with the published `standardwebhooks` library; refusals reach the API's Problem with
 * the hook's message; custom claims reach the ID token and the access token, reserved ones never;
 * a receiver that never answers is a timeout (HOOK_TIMEOUT_MS, a real HTTP timeout, kept short)
 * that refuses (fails closed) or lets the act through (fails open); each call is counted.
 */

/** The value of one Prometheus sample, or 0. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[3]);
  }
  return 0;
}

const TIMEOUT_MS = '300';

const passwordSignIn = (t: TestApp, email: string, password: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'email', identifier: email, password },
  });

describe('synchronous hooks, failing closed (the default)', () => {
  const secret = newSecret();
  let receiver: Receiver;
  let f: OidcFixture;
  let t: TestApp;
  let idp: ProviderSink;
  let metricsPort: number;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    idp = await ProviderSink.start();
    metricsPort = await freePort();
    f = await oidcFixture({
      ...hookEnv(secret, receiver.url, { METRICS_PORT: String(metricsPort) }),
      ...idp.env(),
    });
    t = f.t;
  });
  afterAll(async () => {
    await f?.close();
    await receiver?.close();
    await idp?.close();
  });
  beforeEach(() => {
    receiver.calls.length = 0;
    receiver.reply = () => ({ json: { allow: true } });
  });

  async function scrape(): Promise<string> {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    return res.text();
  }

  it('a sign-up refused by before_identity_created answers 403 hooks.refused with the message, and makes nothing', async () => {
    const address = uniqueEmail('refused');
    receiver.reply = (call) =>
      call.type === 'before_identity_created'
        ? { json: { allow: false, message: 'Sign-ups are closed for example.com.' } }
        : { json: { allow: true } };
    const res = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      code: 'hooks.refused',
      status: 403,
      retryable: false,
      hookMessage: 'Sign-ups are closed for example.com.',
    });
    expect(receiver.calls).toHaveLength(1);
    expect(receiver.calls[0].data).toMatchObject({
      via: 'sign_up',
      identifier: { type: 'email', value: address },
    });
    // No password (nor its hash) is ever sent to a hook.
    expect(receiver.calls[0].body).not.toContain(PASSWORD);
    expect(receiver.calls[0].body).not.toContain('$argon2');
    const row = await t.ctx.database.db
      .selectFrom('identifiers')
      .select('id')
      .where('value', '=', address)
      .executeTakeFirst();
    expect(row).toBeUndefined();

    receiver.reply = () => ({ json: { allow: true } });
    const allowed = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
    expect(allowed.statusCode).toBe(201);
  });

  it('a password sign-in refused by before_sign_in answers 403 with the message and opens no session', async () => {
    const person = await createPerson(t.ctx);
    receiver.reply = () => ({ json: { allow: false, message: 'Your account is suspended until Monday.' } });
    const res = await passwordSignIn(t, person.email, person.password);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      code: 'hooks.refused',
      hookMessage: 'Your account is suspended until Monday.',
    });
    expect(receiver.calls.map((c) => c.type)).toEqual(['before_sign_in']);
    expect(receiver.calls[0].data).toMatchObject({ identityId: person.identityId, method: 'password' });
    expect(receiver.calls[0].body).not.toContain(person.password);
    const sessions = await t.ctx.database.db
      .selectFrom('sessions')
      .select('id')
      .where('identity_id', '=', person.identityId)
      .execute();
    expect(sessions).toHaveLength(0);

    // A refusal without a message: the catalogue's words only.
    receiver.reply = () => ({ json: { allow: false } });
    const bare = await passwordSignIn(t, person.email, person.password);
    expect(bare.statusCode).toBe(403);
    expect(bare.json().hookMessage).toBeUndefined();

    receiver.reply = () => ({ json: { allow: true } });
    expect((await passwordSignIn(t, person.email, person.password)).statusCode).toBe(201);
  });

  it('a provider sign-in: a new subject is refused by before_identity_created, a known one by before_sign_in', async () => {
    const subject = `hooked-${Date.now()}`;
    receiver.reply = (call) =>
      call.type === 'before_identity_created'
        ? { json: { allow: false, message: 'No new accounts.' } }
        : { json: { allow: true } };
    const first = await providerSignIn(t.app, await freshToken(t.app, idp, t.clock, { sub: subject }));
    expect(first.statusCode).toBe(403);
    expect(first.json()).toMatchObject({ code: 'hooks.refused', hookMessage: 'No new accounts.' });
    expect(receiver.calls[0].data).toMatchObject({ via: 'provider', provider: 'acme', subject });
    const links = await t.ctx.database.db
      .selectFrom('provider_links')
      .select('id')
      .where('subject', '=', subject)
      .execute();
    expect(links).toHaveLength(0);

    receiver.calls.length = 0;
    receiver.reply = (call) =>
      call.type === 'before_sign_in'
        ? { json: { allow: false, message: 'Not today.' } }
        : { json: { allow: true } };
    const second = await providerSignIn(t.app, await freshToken(t.app, idp, t.clock, { sub: subject }));
    expect(second.statusCode).toBe(403);
    expect(second.json()).toMatchObject({ code: 'hooks.refused', hookMessage: 'Not today.' });
    expect(receiver.calls.map((c) => c.type)).toEqual(['before_identity_created', 'before_sign_in']);
    expect(receiver.calls[1].data).toMatchObject({ method: 'provider' });

    // The identity now exists: its next sign-in asks only before_sign_in.
    receiver.calls.length = 0;
    receiver.reply = () => ({ json: { allow: true } });
    const third = await providerSignIn(t.app, await freshToken(t.app, idp, t.clock, { sub: subject }));
    expect(third.statusCode).toBe(201);
    expect(receiver.calls.map((c) => c.type)).toEqual(['before_sign_in']);
  });

  it('custom claims reach the ID token and the access token; reserved names never do', async () => {
    receiver.reply = (call) =>
      call.type === 'custom_claims'
        ? {
            json: {
              claims: {
                tier: 'gold',
                groups: ['a', 'b'],
                sub: 'someone-else',
                iss: 'https://evil.example',
                aud: 'other',
                exp: 1,
                sid: 'x',
                org_id: 'forged',
                email: 'forged@example.com',
              },
            },
          }
        : { json: { allow: true } };
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const { url, verifier, state, nonce } = await startAuthorization(f, config);
    const landed = await browse(f, url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const claims = tokens.claims() as Record<string, unknown>;
    expect(claims.tier).toBe('gold');
    expect(claims.groups).toEqual(['a', 'b']);
    expect(claims.sub).toBe(person.identityId);
    expect(claims.iss).toBe(f.origin);
    expect(claims.aud).toBe(FIRST_PARTY.id);
    expect(claims.org_id).toBeUndefined();
    expect(claims.email).toBeUndefined();
    expect(claims.sid).not.toBe('x');

    const introspected = (await client.tokenIntrospection(config, tokens.access_token)) as Record<
      string,
      unknown
    >;
    expect(introspected.active).toBe(true);
    expect(introspected.tier).toBe('gold');
    expect(introspected.sub).toBe(person.identityId);
    expect(introspected.org_id).toBeUndefined();
    expect(introspected.email).toBeUndefined();

    // One call per token response: the ID token and the access token share it.
    const asked = receiver.calls.filter((c) => c.type === 'custom_claims');
    expect(asked).toHaveLength(1);
    expect(asked[0].data).toMatchObject({ identityId: person.identityId, clientId: FIRST_PARTY.id });
    expect(asked[0].body).not.toContain(tokens.access_token);
    // The dropped names are logged (names only) and counted.
    expect(t.logs()).toContain('hook claims dropped');
    expect(t.logs()).not.toContain('forged@example.com');
    expect(
      sample(await scrape(), 'identity_hook_calls_total', {
        hook: 'custom_claims',
        outcome: 'dropped_claim',
      }),
    ).toBe(7);
  });

  it('a `__proto__` claim is dropped, never a prototype of the claims', async () => {
    receiver.reply = (call) =>
      call.type === 'custom_claims'
        ? { raw: '{"claims":{"__proto__":{"polluted":true},"tier":"silver"}}' }
        : { json: { allow: true } };
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const { url, verifier, state, nonce } = await startAuthorization(f, config);
    const landed = await browse(f, url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const claims = tokens.claims() as Record<string, unknown>;
    expect(claims.tier).toBe('silver');
    expect(claims.polluted).toBeUndefined();
    const introspected = (await client.tokenIntrospection(config, tokens.access_token)) as Record<
      string,
      unknown
    >;
    expect(introspected.tier).toBe('silver');
    expect(introspected.polluted).toBeUndefined();
    // Dropped and logged by name like a reserved claim, not kept as the copy's prototype.
    expect(t.logs()).toContain('"dropped":["__proto__"]');
  });

  it('a receiver that never answers: the sign-in is 503 hooks.unavailable, retryable, and the token request fails', async () => {
    const person = await createPerson(t.ctx);
    receiver.reply = () => 'hang';
    const res = await passwordSignIn(t, person.email, person.password);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'hooks.unavailable', status: 503, retryable: true });
    expect(t.logs()).toContain('hook failed: refusing (fails closed)');
    expect(t.logs()).not.toContain(secret);

    // custom_claims failing closed: no token is issued.
    receiver.reply = (call) => (call.type === 'custom_claims' ? 'hang' : { json: { allow: true } });
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const { url, verifier, state, nonce } = await startAuthorization(f, config);
    const landed = await browse(f, url.href, jar);
    await expect(
      client.authorizationCodeGrant(config, landed.callback as URL, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
      }),
    ).rejects.toMatchObject({ error: 'temporarily_unavailable' });
  });

  it('counts every call by hook and outcome, with its duration', async () => {
    const person = await createPerson(t.ctx);
    const before = await scrape();
    receiver.reply = () => ({ json: { allow: false } });
    await passwordSignIn(t, person.email, person.password);
    receiver.reply = () => ({ json: { allow: true } });
    await passwordSignIn(t, person.email, person.password);
    receiver.reply = () => 'hang';
    await passwordSignIn(t, person.email, person.password);
    receiver.reply = () => ({ json: 'not an object' });
    await passwordSignIn(t, person.email, person.password);
    const after = await scrape();
    const delta = (outcome: string) =>
      sample(after, 'identity_hook_calls_total', { hook: 'before_sign_in', outcome }) -
      sample(before, 'identity_hook_calls_total', { hook: 'before_sign_in', outcome });
    expect(delta('refused')).toBe(1);
    expect(delta('allowed')).toBe(1);
    expect(delta('timeout')).toBe(1);
    expect(delta('failed')).toBe(1);
    const count = (text: string) =>
      sample(text, 'identity_hook_duration_seconds_count', { hook: 'before_sign_in' });
    expect(count(after) - count(before)).toBe(4);
    // The timed-out call took at least the configured timeout.
    const sum = (text: string) =>
      sample(text, 'identity_hook_duration_seconds_sum', { hook: 'before_sign_in' });
    expect(sum(after) - sum(before)).toBeGreaterThanOrEqual(Number(TIMEOUT_MS) / 1000);
  });
});

describe('synchronous hooks, failing open (HOOKS_FAIL_OPEN=on)', () => {
  const secret = newSecret();
  let receiver: Receiver;
  let t: TestApp;
  let metricsPort: number;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    metricsPort = await freePort();
    t = await createTestApp({
      clock: new ManualClock(new Date()),
      env: hookEnv(secret, receiver.url, { HOOKS_FAIL_OPEN: 'on', METRICS_PORT: String(metricsPort) }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('a receiver that never answers lets the sign-up and the sign-in through, counted as timeouts', async () => {
    receiver.reply = () => 'hang';
    const person = await createPerson(t.ctx);
    const res = await passwordSignIn(t, person.email, person.password);
    expect(res.statusCode).toBe(201);
    const up = await signUp(t.app, { ...emailForm(uniqueEmail('open')), password: PASSWORD });
    expect(up.statusCode).toBe(201);
    expect(receiver.calls.map((c) => c.type)).toEqual(['before_sign_in', 'before_identity_created']);
    expect(t.logs()).toContain('hook failed: proceeding (fails open)');
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(sample(text, 'identity_hook_calls_total', { hook: 'before_sign_in', outcome: 'timeout' })).toBe(1);
    expect(
      sample(text, 'identity_hook_calls_total', { hook: 'before_identity_created', outcome: 'timeout' }),
    ).toBe(1);
  });

  it('a refusal still refuses: failing open is for failures only', async () => {
    receiver.reply = () => ({ json: { allow: false, message: 'No.' } });
    const person = await createPerson(t.ctx);
    const res = await passwordSignIn(t, person.email, person.password);
    expect(res.statusCode).toBe(403);
    expect(res.json().hookMessage).toBe('No.');
  });
});

describe('synchronous hooks on a redirect sign-in', () => {
  const secret = newSecret();
  let receiver: Receiver;
  let up: Upstream;
  let t: TestApp;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    up = await startUpstream({ ...upstreamClient('acme') });
    t = await createTestApp({
      clock: new ManualClock(new Date()),
      upstreamFetch: hostMappingFetch({}),
      env: appEnv([redirectEntry('acme', { issuer: up.issuer })], hookEnv(secret, receiver.url)),
    });
  });
  afterAll(async () => {
    await t?.close();
    await up?.close();
    await receiver?.close();
  });

  it('a refused new identity returns hook_refused and makes nothing; a timeout failing closed returns unavailable', async () => {
    const subject = `sub-${Date.now()}`;
    up.setAccount(subject, { email: uniqueEmail('redirect'), email_verified: true });
    up.login = subject;
    receiver.reply = (call) =>
      call.type === 'before_identity_created'
        ? { json: { allow: false, message: 'No.' } }
        : { json: { allow: true } };
    const before = await footprint(t);
    const refused = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    // The message is not carried in a URL: the page shows its own sentence.
    expectError(refused.callback, 'acme', 'hook_refused', SIGN_UP_PAGE);
    expect(await footprint(t)).toEqual(before);
    expect(await linkedTo(t, 'acme', subject)).toEqual([]);
    expect(receiver.calls.map((c) => c.type)).toEqual(['before_identity_created']);
    expect(receiver.calls[0].data).toMatchObject({ via: 'provider', provider: 'acme', subject });

    receiver.reply = () => 'hang';
    const timedOut = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    expectError(timedOut.callback, 'acme', 'unavailable', SIGN_UP_PAGE);
    expect(await footprint(t)).toEqual(before);

    // Allowed: the identity is made, and the handoff's session asks before_sign_in.
    receiver.calls.length = 0;
    receiver.reply = () => ({ json: { allow: true } });
    const allowed = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    const res = await exchange(t, handoffOf(allowed), allowed.browser);
    expect(res.statusCode).toBe(201);
    expect(receiver.calls.map((c) => c.type)).toEqual(['before_identity_created', 'before_sign_in']);
  });
});

describe('before_sign_in on a passkey sign-in (its session opens in the challenge transaction)', () => {
  const secret = newSecret();
  const origin = 'https://id.example';
  let receiver: Receiver;
  let t: TestApp;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    t = await createTestApp({
      clock: new ManualClock(new Date()),
      env: { PUBLIC_ORIGIN: origin, ...hookEnv(secret, receiver.url) },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload: payload as object, headers });

  it('is asked once the signature verified, outside the transaction; a refusal opens no session', async () => {
    const who = await elevatedPerson(t);
    const auth = new SoftAuthenticator(origin, 'id.example', false);
    const options = (await post('/passkeys/options', {}, who.headers)).json().data.options;
    expect(
      (await post('/passkeys', { credential: auth.create(options), label: 'Laptop' }, who.headers))
        .statusCode,
    ).toBe(201);

    const signInWith = async () => {
      const opts = (await post('/sign-ins/passkeys/options', {})).json().data.options;
      return post('/sign-ins/passkeys', { credential: auth.get(opts) });
    };
    receiver.calls.length = 0;
    receiver.reply = () => ({ json: { allow: false, message: 'Passkeys are paused.' } });
    const refused = await signInWith();
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'hooks.refused', hookMessage: 'Passkeys are paused.' });
    expect(receiver.calls.map((c) => c.data)).toEqual([
      expect.objectContaining({ identityId: who.person.identityId, method: 'passkey' }),
    ]);

    receiver.reply = () => 'hang';
    expect((await signInWith()).json()).toMatchObject({ code: 'hooks.unavailable' });

    receiver.reply = () => ({ json: { allow: true } });
    expect((await signInWith()).statusCode).toBe(201);
  });
});

describe('hook configuration', () => {
  it('refuses a hook URL without HOOKS_SECRET, and a fail-open list naming no hook', async () => {
    await expect(
      createTestApp({ env: { HOOK_BEFORE_SIGN_IN_URL: 'https://hooks.example/x' } }),
    ).rejects.toThrow('HOOKS_SECRET is required when a hook URL is set');
    await expect(
      createTestApp({ env: { HOOKS_SECRET: newSecret(), HOOKS_FAIL_OPEN: 'before_lunch' } }),
    ).rejects.toThrow('HOOKS_FAIL_OPEN');
  });
});
