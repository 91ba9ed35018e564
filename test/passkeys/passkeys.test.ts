import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { type Bend, SoftAuthenticator } from '../helpers/authenticator.js';
import { elevate, elevatedPerson } from '../helpers/elevation.js';
import { bearer } from '../helpers/identities.js';
import { activeIn, call, createOrganization, ORGS, switchTo } from '../organizations/support.js';
import { DEFAULT_POLICY, expectIdentical, personWithFactor } from '../second-factors/helpers.js';

/**
 * Issue 13 on the server, no browser: passkeys made and used by a software authenticator (a P-256
 * key the test holds), on PGlite and on the PostgreSQL server (TEST_DATABASE_URL).
 */
const ORIGIN = 'https://id.example';
const RP_ID = 'id.example';

let t: TestApp;
const app = () => createTestApp({ env: { PUBLIC_ORIGIN: ORIGIN } });

// One app for the file: every test makes its own people, passkeys and organizations, counts and
// audits by its own identity, and the clock only moves forward. A test that counts a whole table
// or needs another configuration builds its own, closed after it.
let shared: TestApp;
beforeAll(async () => {
  shared = await app();
});
afterAll(async () => shared?.close());
afterEach(async () => {
  if (t !== shared) await t?.close();
});

async function post(url: string, payload: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload: payload as object, headers });
}

/** Registers a passkey for a fresh elevated person; returns the person, its authenticator and the passkey id. */
async function registered(bend: Bend = {}, backupEligible = false) {
  const who = await elevatedPerson(t);
  const auth = new SoftAuthenticator(ORIGIN, RP_ID, backupEligible);
  const opts = await post('/passkeys/options', {}, who.headers);
  expect(opts.statusCode, opts.body).toBe(201);
  const res = await post(
    '/passkeys',
    { credential: auth.create(opts.json().data.options, bend), label: 'Laptop' },
    who.headers,
  );
  return { who, auth, res, options: opts.json().data.options };
}

async function signInWith(auth: SoftAuthenticator, bend: Bend = {}) {
  const opts = await post('/sign-ins/passkeys/options', {});
  expect(opts.statusCode, opts.body).toBe(201);
  return post('/sign-ins/passkeys', { credential: auth.get(opts.json().data.options, bend) });
}

/** A discoverable sign-in whose assertion names no user (the field absent, or null). */
async function withoutHandle(auth: SoftAuthenticator, handle: undefined | null) {
  const opts = (await post('/sign-ins/passkeys/options', {})).json().data.options;
  const credential = auth.get(opts);
  return post('/sign-ins/passkeys', {
    credential: { ...credential, response: { ...credential.response, userHandle: handle } },
  });
}

async function refusedAttempts(identityId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM sign_in_attempts
    WHERE identity_id = ${identityId} AND method = 'passkey' AND outcome = 'refused'`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].n;
}

describe('passkey registration', () => {
  it('registers with an elevated session: listed as a sign-in method and an active method, audited', async () => {
    t = shared;
    const { who, res, options } = await registered();
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().data.id as string;
    expect(options.rp).toEqual({ id: RP_ID, name: 'Identity' });
    expect(options.authenticatorSelection).toMatchObject({
      residentKey: 'preferred',
      userVerification: 'required',
    });
    expect(options.pubKeyCredParams.map((p: { alg: number }) => p.alg)).toEqual([-7, -8, -257]);
    expect(options.attestation).toBe('none');
    expect(options.user.name).toBe(`${who.person.email[0]}***@example.com`);

    const methods = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-in-methods',
      headers: bearer(who.grant.accessToken),
    });
    const passkey = methods.json().data.find((m: { kind: string }) => m.kind === 'passkey');
    expect(passkey).toMatchObject({ id, kind: 'passkey', display: 'Laptop', lastUsedAt: null });
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(who.grant.accessToken),
    });
    expect(JSON.stringify(context.json().data)).toContain('passkey');
    expect(await auditCount(t, 'identity.sign_in_method.verified', who.person.identityId)).toBe(1);

    // The second registration's options exclude the passkey already held.
    const again = await post('/passkeys/options', {}, who.headers);
    expect(again.json().data.options.excludeCredentials.map((c: { id: string }) => c.id)).toHaveLength(1);
  });

  it('needs an elevation', async () => {
    t = shared;
    const who = await elevatedPerson(t);
    const res = await post('/passkeys/options', {}, bearer(who.grant.accessToken));
    expect(res.statusCode).toBe(403);
  });

  it('refuses another origin, another RP ID, no user verification and a foreign challenge with one identical 422', async () => {
    // Its own database: it counts every passkey.
    t = await app();
    const bodies: string[] = [];
    for (const bend of [
      { origin: 'https://evil.example' },
      { rpId: 'evil.example' },
      { userVerified: false },
      { challenge: 'bm90LWEtY2hhbGxlbmdlLWlzc3VlZC1oZXJl' },
      { type: 'webauthn.get' },
    ] satisfies Bend[]) {
      const { res } = await registered(bend);
      expect(res.statusCode, JSON.stringify(bend)).toBe(422);
      bodies.push(res.body.replace(/"instance":"[^"]*"|"requestId":"[^"]*"/g, ''));
    }
    expect(new Set(bodies).size).toBe(1);
    const count = await sql<{ n: number }>`SELECT count(*)::int AS n FROM passkeys`.execute(
      t.ctx.database.db,
    );
    expect(count.rows[0].n).toBe(0);
  });

  it('a registration challenge is single use', async () => {
    t = shared;
    const { who, auth, res, options } = await registered();
    expect(res.statusCode).toBe(201);
    const other = new SoftAuthenticator(ORIGIN, RP_ID);
    const replay = await post('/passkeys', { credential: other.create(options) }, who.headers);
    expect(replay.statusCode).toBe(422);
    expect(auth.credentialId).not.toBe(other.credentialId);
  });
});

describe('passkey sign-in', () => {
  it('signs in with no identifier and no second step; counts as used', async () => {
    t = shared;
    const { who, auth } = await registered();
    const res = await signInWith(auth);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.kind).toBe('session');
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(res.json().data.accessToken),
    });
    expect(context.json().data.identityId).toBe(who.person.identityId);
  });

  it('options are the same whether an identifier is given, unknown, or absent', async () => {
    t = shared;
    const { who } = await registered();
    const shapes: string[] = [];
    for (const body of [
      {},
      { identifierType: 'email', identifier: who.person.email },
      { identifierType: 'email', identifier: 'nobody@example.com' },
    ]) {
      const res = await post('/sign-ins/passkeys/options', body);
      expect(res.statusCode).toBe(201);
      const { options } = res.json().data;
      shapes.push(JSON.stringify({ ...options, challenge: undefined }));
    }
    expect(new Set(shapes).size).toBe(1);
  });

  it('refuses every failure with one identical 401', async () => {
    t = shared;
    const { auth } = await registered();
    const bodies: string[] = [];
    const stranger = new SoftAuthenticator(ORIGIN, RP_ID);
    stranger.userHandle = auth.userHandle;
    const cases: [string, () => Promise<{ statusCode: number; body: string }>][] = [
      ['unknown credential', () => signInWith(stranger)],
      ['bad signature', () => signInWith(auth, { wrongKey: true })],
      ['wrong origin', () => signInWith(auth, { origin: 'https://evil.example' })],
      ['wrong RP ID', () => signInWith(auth, { rpId: 'evil.example' })],
      ['no user verification', () => signInWith(auth, { userVerified: false })],
      ['no user handle', () => withoutHandle(auth, undefined)],
      ['a null user handle', () => withoutHandle(auth, null)],
      [
        'unissued challenge',
        () => post('/sign-ins/passkeys', { credential: auth.get({ challenge: 'dW5pc3N1ZWQtY2hhbGxlbmdl' }) }),
      ],
    ];
    for (const [name, attempt] of cases) {
      const res = await attempt();
      expect(res.statusCode, name).toBe(401);
      bodies.push(res.body.replace(/"instance":"[^"]*"|"requestId":"[^"]*"/g, ''));
    }
    expect(new Set(bodies).size).toBe(1);
  });

  it('a discoverable sign-in without a user handle is refused like any failure, and the passkey still signs in with one', async () => {
    // Security round 3, finding 11: the handle is what says whose passkey answered when no user
    // was named (WebAuthn Level 3, 7.2); an assertion without it used to open a session.
    t = shared;
    const { who, auth } = await registered();
    const answers = [await withoutHandle(auth, undefined), await withoutHandle(auth, null)];
    answers.push(await signInWith(auth, { wrongKey: true }));
    expectIdentical(answers, 401, 'identity.sign_in_refused');
    const ok = await signInWith(auth);
    expect(ok.statusCode, ok.body).toBe(201);
    const context = await t.app.inject({
      method: 'GET',
      url: '/api/v1/session/context',
      headers: bearer(ok.json().data.accessToken),
    });
    expect(context.json().data.identityId).toBe(who.person.identityId);
  });

  it('sign-in options need no body at all: no content type, no length, as a plain button sends them', async () => {
    t = shared;
    const bare = await t.app.inject({ method: 'POST', url: '/api/v1/sign-ins/passkeys/options' });
    expect(bare.statusCode, bare.body).toBe(201);
    expect(bare.json().data.options.allowCredentials).toEqual([]);
    // Anything else that is not JSON is still refused before validation.
    const text = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/passkeys/options',
      headers: { 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(text.statusCode).toBe(415);
  });

  it('a stranger sending a known credential id with a bad signature writes nothing in the owner’s history', async () => {
    t = shared;
    const { who, auth } = await registered();
    for (const bend of [{ wrongKey: true }, { origin: 'https://evil.example' }, { userVerified: false }]) {
      expect((await signInWith(auth, bend)).statusCode).toBe(401);
    }
    expect((await withoutHandle(auth, undefined)).statusCode).toBe(401);
    expect(await refusedAttempts(who.person.identityId)).toBe(0);
    // A refusal the passkey really signed (its counter went back: a copied authenticator) is kept.
    expect((await signInWith(auth, { counter: 5 })).statusCode).toBe(201);
    expect((await signInWith(auth, { counter: 3 })).statusCode).toBe(401);
    expect(await refusedAttempts(who.person.identityId)).toBe(1);
  });

  it('spent and expired challenges are refused with the same bytes as a bad signature', async () => {
    t = shared;
    const { auth } = await registered();
    const answers = [];
    const opts = (await post('/sign-ins/passkeys/options', {})).json().data.options;
    const assertion = auth.get(opts);
    expect((await post('/sign-ins/passkeys', { credential: assertion })).statusCode).toBe(201);
    answers.push(await post('/sign-ins/passkeys', { credential: assertion }));
    answers.push(await signInWith(auth, { wrongKey: true }));
    const stale = (await post('/sign-ins/passkeys/options', {})).json().data.options;
    t.clock.advance(301);
    answers.push(await post('/sign-ins/passkeys', { credential: auth.get(stale) }));
    expectIdentical(answers, 401, 'identity.sign_in_refused');
  });

  it('the guess budget of password sign-in applies: past the free allowance a credential waits (429)', async () => {
    t = await createTestApp({ env: { PUBLIC_ORIGIN: ORIGIN, RATE_LIMIT_GUESSES: '10/60' } });
    const { auth } = await registered();
    for (let i = 0; i < 10; i++) expect((await signInWith(auth, { wrongKey: true })).statusCode).toBe(401);
    const held = await signInWith(auth);
    expect(held.statusCode).toBe(429);
    expect(Number(held.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('a challenge is spent once: a replayed assertion is refused', async () => {
    t = shared;
    const { auth } = await registered();
    const opts = (await post('/sign-ins/passkeys/options', {})).json().data.options;
    const first = auth.get(opts);
    expect((await post('/sign-ins/passkeys', { credential: first })).statusCode).toBe(201);
    expect((await post('/sign-ins/passkeys', { credential: first })).statusCode).toBe(401);
    // A fresh assertion over the spent challenge too.
    expect((await post('/sign-ins/passkeys', { credential: auth.get(opts) })).statusCode).toBe(401);
  });

  it('an expired challenge is refused', async () => {
    t = shared;
    const { auth } = await registered();
    const opts = (await post('/sign-ins/passkeys/options', {})).json().data.options;
    t.clock.advance(301);
    expect((await post('/sign-ins/passkeys', { credential: auth.get(opts) })).statusCode).toBe(401);
  });

  it('a counter that goes backwards on a device-bound passkey is refused and recorded; a synced one may', async () => {
    t = shared;
    const { who, auth } = await registered();
    expect((await signInWith(auth, { counter: 5 })).statusCode).toBe(201);
    expect((await signInWith(auth, { counter: 3 })).statusCode).toBe(401);
    expect(await auditCount(t, 'identity.passkey.counter_regressed', who.person.identityId)).toBe(1);

    const synced = await registered({}, true);
    expect((await signInWith(synced.auth, { counter: 0 })).statusCode).toBe(201);
    expect((await signInWith(synced.auth, { counter: 0 })).statusCode).toBe(201);
  });

  it('a removed passkey no longer signs in; the password can go while a passkey remains, the last passkey cannot', async () => {
    t = shared;
    const { who, auth, res } = await registered();
    const passkeyId = res.json().data.id as string;
    const methods = (
      await t.app.inject({
        method: 'GET',
        url: '/api/v1/sign-in-methods',
        headers: bearer(who.grant.accessToken),
      })
    ).json().data as { id: string; kind: string }[];
    const removal = (id: string) => post(`/sign-in-methods/${id}/removals`, undefined, who.headers);
    // Password gone: the passkey remains a way in.
    expect((await removal(methods.find((m) => m.kind === 'password')!.id)).statusCode).toBe(204);
    // The address then cannot prove the owner alone, and the passkey is the last way in.
    expect((await removal(passkeyId)).statusCode).toBe(409);
    expect((await signInWith(auth)).statusCode).toBe(201);
  });
});

describe('passkey removal and the OpenAPI document', () => {
  it('removing the last passkey, a second factor, stops the session acting in an organization that requires one', async () => {
    t = shared;
    const { who, res } = await registered();
    expect(res.statusCode, res.body).toBe(201);
    const token = who.grant.accessToken;
    const org = await createOrganization(t, token);
    expect(
      (await call(t.app, 'PATCH', `${ORGS}/${org.id}`, token, { requireSecondFactor: true })).statusCode,
    ).toBe(200);
    expect((await switchTo(t.app, token, org.id)).statusCode).toBe(200);
    expect(await activeIn(t.app, token, org.id)).toBe(true);
    // The password and the address remain a way in, so the passkey may go; with it, the last factor.
    expect(
      (await post(`/sign-in-methods/${res.json().data.id}/removals`, undefined, who.headers)).statusCode,
    ).toBe(204);
    expect(await activeIn(t.app, token, org.id)).toBe(false);
    expect((await switchTo(t.app, token, org.id)).json().code).toBe('organization.second_factor_required');
  });

  it('a removed passkey is refused like any failure, and its refusal is recorded against its identity', async () => {
    t = shared;
    const { who, auth, res } = await registered();
    // A second passkey keeps a way in besides the password.
    const second = new SoftAuthenticator(ORIGIN, RP_ID);
    const opts = (await post('/passkeys/options', {}, who.headers)).json().data.options;
    expect((await post('/passkeys', { credential: second.create(opts) }, who.headers)).statusCode).toBe(201);
    expect(
      (await post(`/sign-in-methods/${res.json().data.id}/removals`, undefined, who.headers)).statusCode,
    ).toBe(204);
    const refused = await signInWith(auth);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().code).toBe('identity.sign_in_refused');
    const attempts = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sign_in_attempts
      WHERE identity_id = ${who.person.identityId} AND method = 'passkey' AND outcome = 'refused'`.execute(
      t.ctx.database.db,
    );
    expect(attempts.rows[0].n).toBe(1);
    expect(await auditCount(t, 'identity.sign_in_method.removed', who.person.identityId)).toBe(1);
    expect((await signInWith(second)).statusCode).toBe(201);
  });

  it('the OpenAPI document lists the passkey routes', async () => {
    t = shared;
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [
      '/api/v1/passkeys/options',
      '/api/v1/passkeys',
      '/api/v1/sign-ins/passkeys/options',
      '/api/v1/sign-ins/passkeys',
      '/api/v1/step-ups/passkeys/options',
      '/api/v1/step-ups/passkeys',
    ]) {
      expect(doc.paths[path]?.post, path).toBeDefined();
    }
  });

  it('in production without WEBAUTHN_* the routes are absent', async () => {
    t = await createTestApp({
      env: { NODE_ENV: 'production', PUBLIC_ORIGIN: ORIGIN, ARGON2_MEMORY_KIB: '19456' },
    });
    expect(t.config.webauthn).toBeUndefined();
    expect((await post('/sign-ins/passkeys/options', {})).statusCode).toBe(404);
  });
});

describe('passkey step-up', () => {
  it('an assertion by the caller’s passkey mints an elevation that works', async () => {
    t = shared;
    const { who, auth } = await registered();
    const opts = await post('/step-ups/passkeys/options', {}, bearer(who.grant.accessToken));
    expect(opts.statusCode).toBe(201);
    expect(opts.json().data.options.allowCredentials).toHaveLength(1);
    const res = await post(
      '/step-ups/passkeys',
      { credential: auth.get(opts.json().data.options) },
      bearer(who.grant.accessToken),
    );
    expect(res.statusCode, res.body).toBe(201);
    const elevation = res.json().data.elevationToken as string;
    const use = await post(
      '/passkeys/options',
      {},
      { ...bearer(who.grant.accessToken), 'x-elevation-token': elevation },
    );
    expect(use.statusCode).toBe(201);
  });

  it('an identity that holds an authenticator app may step up with its passkey instead', async () => {
    t = shared;
    const { person, grant, factor } = await personWithFactor(t);
    const elevation = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const headers = { ...bearer(grant.accessToken), 'x-elevation-token': elevation };
    const auth = new SoftAuthenticator(ORIGIN, RP_ID);
    const creation = (await post('/passkeys/options', {}, headers)).json().data.options;
    expect((await post('/passkeys', { credential: auth.create(creation) }, headers)).statusCode).toBe(201);
    const opts = (await post('/step-ups/passkeys/options', {}, bearer(grant.accessToken))).json().data
      .options;
    const res = await post('/step-ups/passkeys', { credential: auth.get(opts) }, bearer(grant.accessToken));
    expect(res.statusCode, res.body).toBe(201);
  });

  it('another identity’s passkey, or a sign-in challenge, is refused with 403', async () => {
    t = shared;
    const mine = await registered();
    const theirs = await registered();
    const headers = bearer(mine.who.grant.accessToken);
    const opts = (await post('/step-ups/passkeys/options', {}, headers)).json().data.options;
    const foreign = await post('/step-ups/passkeys', { credential: theirs.auth.get(opts) }, headers);
    expect(foreign.statusCode).toBe(403);
    const signInOpts = (await post('/sign-ins/passkeys/options', {})).json().data.options;
    const wrongPurpose = await post('/step-ups/passkeys', { credential: mine.auth.get(signInOpts) }, headers);
    expect(wrongPurpose.statusCode).toBe(403);
    expect(foreign.body.replace(/"instance":"[^"]*"|"requestId":"[^"]*"/g, '')).toBe(
      wrongPurpose.body.replace(/"instance":"[^"]*"|"requestId":"[^"]*"/g, ''),
    );
  });
});
