import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import type { OutboundFetch } from '../../src/features/providers/upstream.js';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from './app.js';
import { createPerson, type Person, signIn } from './identities.js';
import { freePort } from './net.js';

/** A cookie jar for one browser, enough for the provider's and the hosted pages' cookies. */
export class CookieJar {
  readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) {
        this.cookies.delete(name);
      } else {
        this.cookies.set(name, value);
      }
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export interface OidcFixture {
  t: TestApp;
  origin: string;
  redirectUri: string;
  /** Logout tokens received by the RP's back-channel endpoint. */
  logoutTokens: string[];
  backchannel: Server;
  /**
   * Holds the back-channel endpoint's answers from now on: `received` settles when a logout token
   * arrives, and the endpoint answers it (and any after it) only once `release` is called.
   */
  holdLogouts(): { received: Promise<string>; release: () => void };
  /** The environment the service was built with: another instance of it is built from the same. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export const FIRST_PARTY = { id: 'dashboard', secret: `s-${'x'.repeat(40)}` };
export const THIRD_PARTY = { id: 'partner-app', secret: `p-${'y'.repeat(40)}` };
export const PUBLIC_CLIENT = { id: 'spa' };

/**
 * The service on a real port (the relying party speaks HTTP to it) with three clients: a
 * first-party confidential one with a back-channel endpoint served here, a third-party one and a
 * public one. The clock starts at the real time: oidc-provider stamps its own times from it.
 */
export async function oidcFixture(
  env: Record<string, string> = {},
  server = false,
  /** Upstream IdPs' real hosts sent to loopback fakes (hostMappingFetch). */
  upstreamFetch?: OutboundFetch,
): Promise<OidcFixture> {
  const logoutTokens: string[] = [];
  let held: { onToken: (token: string) => void; released: Promise<void> } | null = null;
  const backchannel = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      const token = new URLSearchParams(body).get('logout_token');
      if (token) logoutTokens.push(token);
      if (!held) return void res.writeHead(200).end();
      if (token) held.onToken(token);
      void held.released.then(() => res.writeHead(200).end());
    });
  });
  await new Promise<void>((r) => backchannel.listen(0, '127.0.0.1', r));
  const bcPort = (backchannel.address() as AddressInfo).port;
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const redirectUri = 'http://127.0.0.1:9/callback';
  const clients = [
    {
      client_id: FIRST_PARTY.id,
      client_secret: FIRST_PARTY.secret,
      client_name: 'Dashboard',
      redirect_uris: [redirectUri],
      post_logout_redirect_uris: ['http://127.0.0.1:9/signed-out'],
      grant_types: ['authorization_code', 'refresh_token'],
      backchannel_logout_uri: `http://127.0.0.1:${bcPort}/backchannel`,
      first_party: true,
    },
    {
      client_id: THIRD_PARTY.id,
      client_secret: THIRD_PARTY.secret,
      client_name: 'Partner App',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      token_endpoint_auth_method: 'client_secret_post',
    },
    {
      client_id: PUBLIC_CLIENT.id,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      first_party: true,
    },
  ];
  const serviceEnv = { PUBLIC_ORIGIN: origin, OIDC_CLIENTS: JSON.stringify(clients), ...env };
  const t = await createTestApp({
    server,
    admin: true,
    clock: new ManualClock(new Date()),
    env: serviceEnv,
    ...(upstreamFetch ? { upstreamFetch } : {}),
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  return {
    t,
    origin,
    redirectUri,
    logoutTokens,
    backchannel,
    env: serviceEnv,
    holdLogouts() {
      let release = () => {};
      const released = new Promise<void>((r) => {
        release = () => {
          held = null;
          r();
        };
      });
      let onToken: (token: string) => void = () => {};
      const received = new Promise<string>((r) => {
        onToken = r;
      });
      held = { onToken, released };
      return { received, release };
    },
    async close() {
      await new Promise<void>((r) => backchannel.close(() => r()));
      await t.close();
    },
  };
}

/** A person signed in at the hosted pages: the browser holds the hosted session's cookie. */
export async function hostedSignIn(
  f: OidcFixture,
  person?: Person,
): Promise<{ person: Person; jar: CookieJar }> {
  const p = person ?? (await createPerson(f.t.ctx));
  const jar = new CookieJar();
  await signInOnPage(f, jar, p);
  return { person: p, jar };
}

/**
 * What the hosted sign-in form does in the browser of `jar`: a password sign-in, its refresh token
 * handed to the cookie (which ends the session the cookie named before).
 */
export async function signInOnPage(f: OidcFixture, jar: CookieJar, person: Person): Promise<void> {
  const grant = await signIn(f.t.app, person);
  const res = await fetch(`${f.origin}/api/v1/browser-session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: f.origin, cookie: jar.header() },
    body: JSON.stringify({ refreshToken: grant.refreshToken }),
  });
  if (res.status !== 201) throw new Error(`handover failed: ${res.status} ${await res.text()}`);
  jar.take(res);
}

export async function rpConfig(f: OidcFixture, c: { id: string; secret?: string }, post = false) {
  const auth = c.secret
    ? post
      ? client.ClientSecretPost(c.secret)
      : client.ClientSecretBasic(c.secret)
    : client.None();
  return client.discovery(new URL(f.origin), c.id, undefined, auth, {
    execute: [client.allowInsecureRequests],
  });
}

/**
 * Follows the browser's redirects from `url` until the provider sends it back to the relying
 * party (answered: the callback URL) or a page is shown (answered: that response).
 */
export async function browse(
  f: OidcFixture,
  url: string,
  jar: CookieJar,
): Promise<{ callback?: URL; page?: { status: number; location?: string; body: string } }> {
  let next = new URL(url, f.origin);
  for (let i = 0; i < 20; i++) {
    if (next.origin !== f.origin) return { callback: next };
    const res = await fetch(next, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(res);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const target = new URL(location, next);
      // The hosted pages (a hash route) are where a person would act: stop there.
      if (target.pathname.startsWith('/account/'))
        return { page: { status: res.status, location: target.href, body: '' } };
      next = target;
      continue;
    }
    return { page: { status: res.status, body: await res.text() } };
  }
  throw new Error('too many redirects');
}

export async function startAuthorization(
  f: OidcFixture,
  config: client.Configuration,
  params: Record<string, string> = {},
) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: f.redirectUri,
    scope: 'openid email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...params,
  });
  return { url, verifier, state, nonce };
}

export const randomSuffix = () => randomBytes(4).toString('hex');

/**
 * The person answers the hosted consent page (`location`: `/account/#/consent/<uid>`) as the
 * account UI does (same origin, the browser's cookies): the URL the provider continues at.
 */
export async function hostedConsent(f: OidcFixture, jar: CookieJar, location: string, allow = true) {
  const uid = /#\/consent\/([\w-]+)$/.exec(location)?.[1];
  if (!uid) throw new Error(`not a consent page: ${location}`);
  const res = await fetch(`${f.origin}/oidc/interaction/${uid}/consent`, {
    method: 'POST',
    headers: {
      cookie: jar.header(),
      origin: f.origin,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify({ decision: allow ? 'allow' : 'deny' }),
  });
  if (res.status !== 200) throw new Error(`consent failed: ${res.status} ${await res.text()}`);
  jar.take(res);
  return ((await res.json()) as { redirectTo: string }).redirectTo;
}

/**
 * RP-initiated logout in the browser: opens the end-session `url`, answers the provider's
 * confirmation form "Sign out", and returns the form's answer (a 303 to the post-logout redirect
 * URI, or to the provider's "signed out" page).
 */
export async function confirmLogout(f: OidcFixture, url: string, jar: CookieJar): Promise<Response> {
  const page = await fetch(url, { headers: { cookie: jar.header() } });
  jar.take(page);
  const html = await page.text();
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  if (page.status !== 200 || !action || !xsrf) throw new Error(`no logout form: ${page.status} ${html}`);
  const res = await fetch(new URL(action, f.origin), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, logout: 'yes' }),
  });
  jar.take(res);
  return res;
}
