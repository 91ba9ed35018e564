import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminRequest } from '../helpers/admin.js';
import { bearer } from '../helpers/identities.js';
import { browse, CookieJar, type OidcFixture, oidcFixture } from '../helpers/oidc.js';
import {
  type Candidate,
  CONSOLE_ORIGIN,
  hostedOperatorSignIn,
  passwordOnly,
  withAuthenticator,
} from '../helpers/operators.js';

/*
 * The console's sign-in and session on the admin listener (docs/admin.md, "The console's session"):
 * a real authorization code flow with PKCE through the service's own provider, the code exchanged
 * in process, the token kept in a sealed HttpOnly cookie of the admin origin and handed to the
 * page's script only from that origin; the idle timeout; the end with the account's session.
 */

const IDLE = 120;
let f: OidcFixture;

const admin = () => {
  if (!f.t.admin) throw new Error('no admin listener');
  return f.t.admin;
};

beforeAll(async () => {
  f = await oidcFixture({ CONSOLE_IDLE_TIMEOUT: String(IDLE) });
});
afterAll(() => f.close());

async function grant(c: Candidate, role: string) {
  const put = await admin().inject({
    method: 'PUT',
    url: `/admin/v1/operators/${c.person.identityId}`,
    headers: bearer(ADMIN_KEY),
    payload: { role },
  });
  expect(put.statusCode, put.body).toBe(200);
}

/** The console's sign-in in a browser: admin cookies in `consoleJar`, the provider's in the hosted jar. */
async function signInToConsole(c: Candidate, consoleJar = new CookieJar()) {
  const hosted = await hostedOperatorSignIn(f, c);
  const start = await admin().inject({ method: 'GET', url: '/console/sign-in' });
  expect(start.statusCode).toBe(303);
  const location = String(start.headers.location);
  expect(location.startsWith(`${f.origin}/oidc/auth?`)).toBe(true);
  expect(new URL(location).searchParams.get('code_challenge_method')).toBe('S256');
  for (const line of [start.headers['set-cookie']].flat()) if (line) take(consoleJar, line);
  const landed = await browse(f, location, hosted);
  const callback = landed.callback as URL;
  expect(callback.origin).toBe(CONSOLE_ORIGIN);
  const back = await admin().inject({
    method: 'GET',
    url: `${callback.pathname}${callback.search}`,
    headers: { cookie: consoleJar.header() },
  });
  for (const line of [back.headers['set-cookie']].flat()) if (line) take(consoleJar, line);
  return { back, consoleJar, callback };
}

function take(jar: CookieJar, line: string) {
  jar.take(new Response(null, { headers: [['set-cookie', line]] }));
}

/** What the page's script does: POST /console/session; the browser keeps the renewed cookie. */
async function session(jar: CookieJar, origin: string | null = CONSOLE_ORIGIN) {
  const r = await admin().inject({
    method: 'POST',
    url: '/console/session',
    headers: { cookie: jar.header(), ...(origin ? { origin } : {}) },
  });
  for (const line of [r.headers['set-cookie']].flat()) if (line) take(jar, line);
  return r;
}

describe("the console's session", () => {
  it('signs an operator in with PKCE; the page gets the token from its own origin only; it acts with it', async () => {
    const c = await withAuthenticator(f);
    await grant(c, 'support');
    const { back, consoleJar } = await signInToConsole(c);
    expect(back.statusCode, back.body).toBe(303);
    expect(back.headers.location).toBe('/console/');
    const cookie = [back.headers['set-cookie']].flat().join('\n');
    expect(cookie).toMatch(/HttpOnly/);
    // The cookie holds the token sealed, never in clear.
    const s = await session(consoleJar);
    expect(s.statusCode, s.body).toBe(200);
    const { accessToken, role, identityId } = s.json().data;
    expect(cookie).not.toContain(accessToken);
    expect({ role, identityId }).toEqual({ role: 'support', identityId: c.person.identityId });
    expect(
      (await admin().inject({ method: 'GET', url: '/admin/v1/identities', headers: bearer(accessToken) }))
        .statusCode,
    ).toBe(200);
    // Another site cannot make the browser fetch it.
    for (const origin of [null, 'https://evil.example', f.origin]) {
      const r = await session(consoleJar, origin);
      expect(r.statusCode, String(origin)).toBe(403);
      expect(r.json().code).toBe('identity.cross_site_refused');
    }
    const fetchedCrossSite = await admin().inject({
      method: 'POST',
      url: '/console/session',
      headers: { cookie: consoleJar.header(), origin: CONSOLE_ORIGIN, 'sec-fetch-site': 'cross-site' },
    });
    expect(fetchedCrossSite.statusCode).toBe(403);
  });

  it('ends after the idle timeout, and is kept alive by use', async () => {
    const c = await withAuthenticator(f);
    await grant(c, 'auditor');
    const { consoleJar } = await signInToConsole(c);
    f.t.clock.advance(IDLE - 20);
    expect((await session(consoleJar)).statusCode).toBe(200);
    f.t.clock.advance(IDLE - 20);
    expect((await session(consoleJar)).statusCode).toBe(200);
    f.t.clock.advance(IDLE);
    const idle = await session(consoleJar);
    expect(idle.statusCode).toBe(401);
    expect(idle.json().code).toBe('admin.console_session_ended');
  });

  it("ends with the operator's account sessions, and at sign-out (the token revoked)", async () => {
    const c = await withAuthenticator(f);
    await grant(c, 'owner');
    const first = await signInToConsole(c);
    expect((await session(first.consoleJar)).statusCode).toBe(200);
    expect(
      (await adminRequest(admin(), 'POST', `/identities/${c.person.identityId}/session-revocations`))
        .statusCode,
    ).toBe(204);
    expect((await session(first.consoleJar)).statusCode).toBe(401);

    const second = await signInToConsole(c);
    const token = (await session(second.consoleJar)).json().data.accessToken;
    const out = await admin().inject({
      method: 'POST',
      url: '/console/sign-outs',
      headers: { cookie: second.consoleJar.header(), origin: CONSOLE_ORIGIN },
    });
    expect(out.statusCode).toBe(204);
    expect(
      (await admin().inject({ method: 'GET', url: '/admin/v1/identities', headers: bearer(token) }))
        .statusCode,
    ).toBe(401);
  });

  it('refuses a person without a role or without a second factor, and a callback not of its flow', async () => {
    const noRole = await withAuthenticator(f);
    expect((await signInToConsole(noRole)).back.statusCode).toBe(403);
    const single = await passwordOnly(f);
    await grant(single, 'owner');
    const refused = await signInToConsole(single);
    expect(refused.back.statusCode).toBe(403);
    expect(String(refused.back.headers['set-cookie'])).not.toMatch(/console-session=v1/);

    const c = await withAuthenticator(f);
    await grant(c, 'support');
    const hosted = await hostedOperatorSignIn(f, c);
    const start = await admin().inject({ method: 'GET', url: '/console/sign-in' });
    const landed = await browse(f, String(start.headers.location), hosted);
    const cb = landed.callback as URL;
    // Without the browser's flow cookie (another browser, a forged link), and with a changed state.
    const bare = await admin().inject({ method: 'GET', url: `${cb.pathname}${cb.search}` });
    expect(bare.statusCode).toBe(400);
    expect(bare.json().code).toBe('admin.console_sign_in_failed');
  });

  it("asks the provider for a new sign-in when the console needs a fresh one (an erasure's step-up)", async () => {
    const plain = new URL(
      String((await admin().inject({ method: 'GET', url: '/console/sign-in' })).headers.location),
    );
    expect(plain.searchParams.get('prompt')).toBeNull();
    const fresh = await admin().inject({ method: 'GET', url: '/console/sign-in?fresh=1' });
    const url = new URL(String(fresh.headers.location));
    expect(url.searchParams.get('prompt')).toBe('login');
    expect(url.searchParams.get('max_age')).toBe('0');
    expect((await admin().inject({ method: 'GET', url: '/console/sign-in?fresh=yes' })).statusCode).toBe(400);
    // The provider takes it: a page to sign in on, not an error back to the console.
    const c = await withAuthenticator(f);
    const landed = await browse(f, url.href, await hostedOperatorSignIn(f, c));
    expect(landed.callback).toBeUndefined();
    expect(landed.page?.location ?? '').toMatch(/\/account\//);
  });

  it('is never on the public port', async () => {
    for (const [method, url] of [
      ['GET', '/console/sign-in'],
      ['GET', '/console/callback?code=x&state=y'],
      ['POST', '/console/session'],
      ['POST', '/console/sign-outs'],
    ] as const) {
      const r = await fetch(`${f.origin}${url}`, {
        method,
        headers: { origin: f.origin },
        redirect: 'manual',
      });
      expect(r.status, url).toBe(404);
    }
  });
});
