import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { CookieJar, hostedSignIn, type OidcFixture, oidcFixture } from '../helpers/oidc.js';

/**
 * The provider against a relying party nobody on the project wrote: Apache httpd with
 * mod_auth_openidc, Debian's `apache2` and `libapache2-mod-auth-openidc` (2.4.12.x on bookworm),
 * configured by test/oidc/rp/apache2.conf (one Apache per set-up) and driven like a browser:
 * navigations with one cookie jar (the two servers share the host 127.0.0.1, and a browser's
 * cookies do not tell ports apart). Failures print mod_auth_openidc's log (docs/oidc.md, Relying
 * parties tested, quotes it).
 */
const APACHE = '/usr/sbin/apache2';
const AUTH_OPENIDC = '/usr/lib/apache2/modules/mod_auth_openidc.so';
const CONF = join(import.meta.dirname, 'rp', 'apache2.conf');
// Without the two Debian packages (a developer's machine) there is no relying party to run: the
// suite is skipped, not passed. .ci/run installs them with apt-get, so CI always runs it.
const available = existsSync(APACHE) && existsSync(AUTH_OPENIDC);

type Setup = 'SERVER_CACHE' | 'CLIENT_COOKIE' | 'AUTH_POST';

interface Rp {
  setup: Setup;
  clientId: string;
  secret: string;
  port: number;
  origin: string;
  redirectUri: string;
  signedOut: string;
}

function rp(setup: Setup, clientId: string, port: number): Rp {
  const origin = `http://127.0.0.1:${port}`;
  return {
    setup,
    clientId,
    secret: randomBytes(32).toString('base64url'),
    port,
    origin,
    redirectUri: `${origin}/protected/redirect_uri`,
    signedOut: `${origin}/signed-out.html`,
  };
}

/** The entry of OIDC_CLIENTS for one Apache (docs/oidc.md, Clients). */
function registration(r: Rp, extra: Record<string, unknown>) {
  return {
    client_id: r.clientId,
    client_secret: r.secret,
    client_name: `Apache ${r.setup}`,
    redirect_uris: [r.redirectUri],
    post_logout_redirect_uris: [r.signedOut],
    backchannel_logout_uri: `${r.redirectUri}?logout=backchannel`,
    grant_types: ['authorization_code', 'refresh_token'],
    ...extra,
  };
}

interface Apache {
  /** One line a request: `address "request line" status location`. */
  access(): string;
  /** mod_auth_openidc's own words (LogLevel auth_openidc:debug). */
  log(): string;
  stop(): Promise<void>;
}

async function startApache(r: Rp, issuer: string): Promise<Apache> {
  const dir = mkdtempSync(join(tmpdir(), 'rp-apache-'));
  // Apache's children run as www-data (it refuses to serve as root): they read the pages.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'htdocs', 'protected'), { recursive: true });
  writeFileSync(join(dir, 'htdocs', 'protected', 'index.html'), 'protected page\n');
  writeFileSync(join(dir, 'htdocs', 'signed-out.html'), 'signed out of apache\n');
  const child: ChildProcess = spawn(APACHE, ['-DFOREGROUND', '-f', CONF, '-d', dir, '-D', r.setup], {
    env: {
      PATH: process.env.PATH,
      RP_DIR: dir,
      RP_PORT: String(r.port),
      RP_ISSUER: issuer,
      RP_CLIENT_ID: r.clientId,
      RP_CLIENT_SECRET: r.secret,
      RP_PASSPHRASE: randomBytes(32).toString('base64url'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: on shutdown Apache signals its whole group, which would otherwise
    // be vitest's.
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => {
    output += c.toString('utf8');
  });
  child.stderr?.on('data', (c: Buffer) => {
    output += c.toString('utf8');
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  // The whole group is Apache's (detached above): its parent and the children it forked.
  const signal = (name: NodeJS.Signals) => {
    if (child.pid && running()) process.kill(-child.pid, name);
  };
  // Should vitest stop before afterAll, Apache does not outlive it.
  const onExit = () => signal('SIGKILL');
  process.once('exit', onExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const read = (name: string) => {
    try {
      return readFileSync(join(dir, name), 'utf8');
    } catch {
      return '';
    }
  };
  const apache: Apache = {
    access: () => read('access.log'),
    log: () => `${output}${read('error.log')}\n--- access.log ---\n${read('access.log')}`,
    async stop() {
      // RP_APACHE_DUMP=<path>: keeps each set-up's logs in <path>.<SETUP> for reading afterwards.
      if (process.env.RP_APACHE_DUMP) writeFileSync(`${process.env.RP_APACHE_DUMP}.${r.setup}`, apache.log());
      if (running()) {
        // SIGTERM to the parent: it stops its children and exits.
        child.kill('SIGTERM');
        const killed = setTimeout(() => signal('SIGKILL'), 5000);
        await exited;
        clearTimeout(killed);
      }
      process.off('exit', onExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < 200; i++) {
    if (!running()) break;
    try {
      if ((await fetch(r.signedOut)).status === 200) return apache;
    } catch {
      // not listening yet
    }
    await new Promise((w) => setTimeout(w, 50));
  }
  const log = apache.log();
  await apache.stop();
  throw new Error(`apache2 did not start:\n${log}`);
}

const decode = (s: string) =>
  s
    .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(Number.parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

const attr = (tag: string, name: string) =>
  new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)')`, 'i')
    .exec(tag)
    ?.slice(2, 4)
    .find((v) => v !== undefined);

/**
 * The form a page submits by itself when it loads (oidc-provider's form_post answer,
 * mod_auth_openidc's authorization request by POST): its action and fields. A page a person must
 * act on (the sign-out confirmation) is not one.
 */
function selfSubmittingForm(html: string): { action: string; fields: URLSearchParams } | undefined {
  if (!/forms\[0\]\.submit\(\)/.test(html)) return undefined;
  const form = /<form\b[^>]*>/i.exec(html)?.[0];
  if (!form) return undefined;
  const fields = new URLSearchParams();
  for (const input of html.match(/<input\b[^>]*>/gi) ?? []) {
    const name = attr(input, 'name');
    if (name) fields.append(decode(name), decode(attr(input, 'value') ?? ''));
  }
  return { action: decode(attr(form, 'action') ?? ''), fields };
}

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/**
 * One request as a browser's navigation. Not fetch: undici always sends `Sec-Fetch-Mode: cors`,
 * and mod_auth_openidc answers a request that is not a navigation with 401 instead of sending it
 * to the provider.
 */
function navigate(
  url: URL | string,
  jar: CookieJar,
  init: { method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: init.method ?? 'GET',
        headers: {
          accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
          'sec-fetch-mode': 'navigate',
          'sec-fetch-dest': 'document',
          'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) rp-apache.test',
          ...(jar.cookies.size > 0 ? { cookie: jar.header() } : {}),
          ...(init.body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
          ...init.headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => {
          const headers = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
          jar.take({ headers } as Response);
          resolve({ status: res.statusCode ?? 0, headers, body });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

interface Landed {
  status: number;
  url: URL;
  headers: Headers;
  body: string;
  /** Every URL the browser was sent to on the way, in order. */
  trail: string[];
}

describe.skipIf(!available)('Apache httpd with mod_auth_openidc as a relying party', () => {
  let f: OidcFixture;
  const ports: Record<Setup, number> = { SERVER_CACHE: 0, CLIENT_COOKIE: 0, AUTH_POST: 0 };
  const rps = {} as Record<Setup, Rp>;

  beforeAll(async () => {
    for (const s of Object.keys(ports) as Setup[]) ports[s] = await freePort();
    rps.SERVER_CACHE = rp('SERVER_CACHE', 'apache-cache', ports.SERVER_CACHE);
    rps.CLIENT_COOKIE = rp('CLIENT_COOKIE', 'apache-cookie', ports.CLIENT_COOKIE);
    rps.AUTH_POST = rp('AUTH_POST', 'apache-post', ports.AUTH_POST);
    const clients = [
      registration(rps.SERVER_CACHE, { first_party: true }),
      // A third-party client: the consent page comes first.
      registration(rps.CLIENT_COOKIE, { token_endpoint_auth_method: 'client_secret_post' }),
      registration(rps.AUTH_POST, { first_party: true }),
    ];
    f = await oidcFixture(
      // The sweep (and with it each back-channel logout) runs when the test says so.
      { OIDC_CLIENTS: JSON.stringify(clients), OIDC_SWEEP_SECONDS: '60' },
      !!process.env.TEST_DATABASE_URL,
    );
  });
  afterAll(async () => {
    await f?.close();
  });

  /**
   * A browser: follows redirects across the provider and Apache, submits the self-submitting
   * forms, answers the consent page with "allow" as the hosted page would, and stops at the first
   * other page (the hosted sign-in, an error, the protected page).
   */
  async function visit(
    jar: CookieJar,
    url: string,
    init: { method?: 'GET' | 'POST'; body?: URLSearchParams } = {},
  ): Promise<Landed> {
    let next = new URL(url);
    let method = init.method ?? 'GET';
    let body = init.body;
    const trail: string[] = [];
    for (let i = 0; i < 30; i++) {
      trail.push(`${method} ${next.href}`);
      const res = await navigate(next, jar, { method, ...(body ? { body: body.toString() } : {}) });
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        const target = new URL(location, next);
        const consent = /^#\/consent\/([\w-]+)$/.exec(target.hash);
        if (target.origin === f.origin && target.pathname.startsWith('/account/') && consent) {
          // The hosted consent page, answered "allow" by the person.
          trail.push(`consent ${target.href}`);
          const answer = await fetch(`${f.origin}/oidc/interaction/${consent[1]}/consent`, {
            method: 'POST',
            headers: { cookie: jar.header(), origin: f.origin, 'content-type': 'application/json' },
            body: JSON.stringify({ decision: 'allow' }),
          });
          jar.take(answer);
          expect(answer.status).toBe(200);
          next = new URL((await answer.json()).redirectTo as string, f.origin);
          method = 'GET';
          body = undefined;
          continue;
        }
        if (target.origin === f.origin && target.pathname.startsWith('/account/')) {
          trail.push(`GET ${target.href}`);
          return { status: res.status, url: target, headers: res.headers, body: '', trail };
        }
        next = target;
        method = 'GET';
        body = undefined;
        continue;
      }
      const text = res.body;
      const form = res.status === 200 ? selfSubmittingForm(text) : undefined;
      if (form) {
        next = new URL(form.action, next);
        method = 'POST';
        body = form.fields;
        continue;
      }
      return { status: res.status, url: next, headers: res.headers, body: text, trail };
    }
    throw new Error(`too many steps: ${trail.join('\n')}`);
  }

  /** The hosted sign-in, done in this browser: the person's hosted session cookie joins the jar. */
  async function signInHere(jar: CookieJar) {
    const hosted = await hostedSignIn(f);
    for (const [k, v] of hosted.jar.cookies) jar.cookies.set(k, v);
    return hosted.person;
  }

  /** mod_auth_openidc's session, from its info hook (OIDCInfoHook). */
  async function info(r: Rp, jar: CookieJar) {
    const res = await navigate(`${r.redirectUri}?info=json`, jar);
    expect(res.status, res.body).toBe(200);
    return JSON.parse(res.body) as {
      iat: number;
      access_token: string;
      access_token_expires: number;
      refresh_token?: string;
      id_token: Record<string, unknown>;
      userinfo: Record<string, unknown>;
      session: Record<string, unknown>;
    };
  }

  /** A token of this client, introspected at the provider with the client's own credentials. */
  async function introspect(r: Rp, token: string) {
    const basic = Buffer.from(`${r.clientId}:${r.secret}`).toString('base64');
    const form = new URLSearchParams({ token });
    if (r.setup === 'CLIENT_COOKIE') {
      form.set('client_id', r.clientId);
      form.set('client_secret', r.secret);
    }
    const res = await fetch(`${f.origin}/oidc/token/introspection`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(r.setup === 'CLIENT_COOKIE' ? {} : { authorization: `Basic ${basic}` }),
      },
      body: form.toString(),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { active: boolean; sub?: string; client_id?: string };
  }

  /** RP-initiated logout from Apache, confirmed on the provider's page: where it ends. */
  async function rpLogout(r: Rp, jar: CookieJar) {
    const start = await visit(jar, `${r.redirectUri}?logout=${encodeURIComponent(r.signedOut)}`);
    expect(start.url.origin + start.url.pathname, start.trail.join('\n')).toBe(
      `${f.origin}/oidc/session/end`,
    );
    expect(start.status).toBe(200);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(start.body)?.[1];
    expect(xsrf, start.body).toBeTruthy();
    return {
      start,
      end: await visit(jar, `${f.origin}/oidc/session/end/confirm`, {
        method: 'POST',
        body: new URLSearchParams({ xsrf: xsrf as string, logout: 'yes' }),
      }),
    };
  }

  function withLog<T>(apache: Apache, run: () => Promise<T>): Promise<T> {
    return run().catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n--- mod_auth_openidc ---\n${apache.log()}`, {
        cause: error,
      });
    });
  }

  describe('set-up 1: server-side cache (shm), PKCE S256, client_secret_basic, back-channel logout', () => {
    let apache: Apache;
    let r: Rp;
    beforeAll(async () => {
      r = rps.SERVER_CACHE;
      apache = await startApache(r, f.origin);
    });
    afterAll(async () => {
      await apache?.stop();
    });

    const jar = new CookieJar();
    let person: Awaited<ReturnType<typeof signInHere>>;

    it('signs in through the hosted sign-in: the protected page answers with the sub and the userinfo email', () =>
      withLog(apache, async () => {
        // Not signed in anywhere: Apache sends the browser to the provider with PKCE S256.
        const first = await navigate(`${r.origin}/protected/`, jar);
        expect(first.status).toBe(302);
        const auth = new URL(first.headers.get('location') as string);
        expect(auth.origin + auth.pathname).toBe(`${f.origin}/oidc/auth`);
        expect(auth.searchParams.get('client_id')).toBe(r.clientId);
        expect(auth.searchParams.get('response_type')).toBe('code');
        expect(auth.searchParams.get('scope')).toBe('openid email');
        expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
        expect(auth.searchParams.get('redirect_uri')).toBe(r.redirectUri);

        // The provider sends it on to the hosted sign-in, where the person signs in ...
        const hostedPage = await visit(jar, auth.href);
        const uid = /^#\/authorize\/([\w-]+)$/.exec(hostedPage.url.hash)?.[1];
        expect(uid, hostedPage.trail.join('\n')).toBeTruthy();
        person = await signInHere(jar);
        // ... and the page resumes the authorization: back to Apache with a code, exchanged there.
        const landed = await visit(jar, `${f.origin}/oidc/interaction/${uid}/continue`);
        expect(landed.status, landed.trail.join('\n')).toBe(200);
        expect(landed.url.href).toBe(`${r.origin}/protected/`);
        expect(landed.body).toBe('protected page\n');
        expect(landed.headers.get('x-oidc-sub')).toBe(person.identityId);
        expect(landed.headers.get('x-oidc-email')).toBe(person.email);
        expect(landed.trail.some((s) => s.startsWith(`GET ${r.redirectUri}?code=`))).toBe(true);

        // The email came from the userinfo endpoint: the ID token does not carry it.
        const session = await info(r, jar);
        expect(session.id_token.sub).toBe(person.identityId);
        expect(session.id_token.email).toBeUndefined();
        expect(session.id_token.sid).toBeTypeOf('string');
        expect(session.userinfo).toMatchObject({
          sub: person.identityId,
          email: person.email,
          email_verified: true,
        });
        expect(typeof session.refresh_token).toBe('string');
        expect(await introspect(r, session.access_token)).toMatchObject({
          active: true,
          sub: person.identityId,
          client_id: r.clientId,
        });

        // The session is Apache's now: the next request needs no provider.
        const again = await navigate(`${r.origin}/protected/`, jar);
        expect(again.status).toBe(200);
        expect(again.headers.get('x-oidc-sub')).toBe(person.identityId);
      }));

    it('refreshes through its refresh hook: new tokens, the old refresh token spent', () =>
      withLog(apache, async () => {
        const before = await info(r, jar);
        const back = `${r.origin}/protected/`;
        const res = await navigate(
          `${r.redirectUri}?refresh=${encodeURIComponent(back)}&access_token=${encodeURIComponent(before.access_token)}`,
          jar,
        );
        expect(res.status).toBe(302);
        expect(res.headers.get('location')).toBe(back);
        const after = await info(r, jar);
        expect(after.access_token).not.toBe(before.access_token);
        expect(after.refresh_token).toBeTypeOf('string');
        expect(after.refresh_token).not.toBe(before.refresh_token);
        expect(await introspect(r, after.access_token)).toMatchObject({
          active: true,
          sub: person.identityId,
        });
        expect(await introspect(r, after.refresh_token as string)).toMatchObject({ active: true });
        expect((await introspect(r, before.refresh_token as string)).active).toBe(false);
        const page = await navigate(back, jar);
        expect(page.status).toBe(200);
        expect(page.headers.get('x-oidc-sub')).toBe(person.identityId);
      }));

    it('logs out at the provider (RP-initiated): back at Apache signed out, the grant and the hosted session ended', () =>
      withLog(apache, async () => {
        const tokens = await info(r, jar);
        const { end } = await rpLogout(r, jar);
        expect(end.status, end.trail.join('\n')).toBe(200);
        expect(end.url.origin + end.url.pathname).toBe(r.signedOut);
        expect(end.body).toBe('signed out of apache\n');
        expect((await introspect(r, tokens.access_token)).active).toBe(false);
        expect((await introspect(r, tokens.refresh_token as string)).active).toBe(false);
        // Apache's session is gone, and so is the hosted one: back to the hosted sign-in.
        const again = await visit(jar, `${r.origin}/protected/`);
        expect(again.url.hash, again.trail.join('\n')).toMatch(/^#\/authorize\//);
      }));

    it('hears a back-channel logout: sign-out everywhere at the service ends the Apache session', () =>
      withLog(apache, async () => {
        const browser = new CookieJar();
        const p = await signInHere(browser);
        const landed = await visit(browser, `${r.origin}/protected/`);
        expect(landed.status, landed.trail.join('\n')).toBe(200);
        expect(landed.headers.get('x-oidc-sub')).toBe(p.identityId);

        const api = await signIn(f.t.app, p);
        const out = await f.t.app.inject({
          method: 'POST',
          url: '/api/v1/sign-outs/everywhere',
          headers: bearer(api.accessToken),
        });
        expect(out.statusCode).toBe(204);
        // Apache does not know yet: its session stands until the logout token arrives.
        const before = await navigate(`${r.origin}/protected/`, browser);
        expect(before.status).toBe(200);

        const heard = apache
          .access()
          .split('\n')
          .filter((l) => l.includes('"POST /protected/redirect_uri?logout=backchannel ')).length;
        await f.t.ctx.oidc.sweep();
        expect(f.t.logs()).not.toContain('back-channel logout not delivered');
        const lines = apache
          .access()
          .split('\n')
          .filter((l) => l.includes('"POST /protected/redirect_uri?logout=backchannel '));
        expect(lines.length).toBe(heard + 1);
        expect(lines.at(-1)).toMatch(/" 200 -$/);
        const after = await navigate(`${r.origin}/protected/`, browser);
        expect(after.status).toBe(302);
        expect(after.headers.get('location')).toMatch(new RegExp(`^${f.origin}/oidc/auth\\?`));
      }));
  });

  /** Signs a person in at the hosted pages, then at Apache: the protected page's answer. */
  async function signInAt(r: Rp, jar: CookieJar) {
    const person = await signInHere(jar);
    const landed = await visit(jar, `${r.origin}/protected/`);
    expect(landed.status, `${landed.trail.join('\n')}\n${landed.body.slice(0, 500)}`).toBe(200);
    expect(landed.url.href).toBe(`${r.origin}/protected/`);
    expect(landed.headers.get('x-oidc-sub')).toBe(person.identityId);
    expect(landed.headers.get('x-oidc-email')).toBe(person.email);
    return { person, landed };
  }

  describe('set-up 2: sessions in the cookie, response_mode=form_post, client_secret_post, a third-party client', () => {
    let apache: Apache;
    let r: Rp;
    beforeAll(async () => {
      r = rps.CLIENT_COOKIE;
      apache = await startApache(r, f.origin);
    });
    afterAll(async () => {
      await apache?.stop();
    });
    const jar = new CookieJar();
    let person: Awaited<ReturnType<typeof signInHere>>;
    const protectedPage = () => navigate(`${r.origin}/protected/`, jar);
    const refusedRefreshes = () =>
      apache.log().split('oidc_refresh_access_token_before_expiry: access_token could not be refreshed')
        .length - 1;

    it('signs in after the consent page, the code posted back to Apache, the secret in the body', () =>
      withLog(apache, async () => {
        const signedIn = await signInAt(r, jar);
        person = signedIn.person;
        const trail = signedIn.landed.trail;
        expect(
          trail.some(
            (s) => s.startsWith(`GET ${f.origin}/oidc/auth?`) && s.includes('response_mode=form_post'),
          ),
        ).toBe(true);
        expect(trail.some((s) => s.startsWith(`consent ${f.origin}/account/#/consent/`))).toBe(true);
        expect(trail).toContain(`POST ${r.redirectUri}`);
        // The exchange authenticated with client_secret_post, the only method registered for it.
        expect(apache.log()).toContain('token_endpoint_auth=client_secret_post');
        const token = signedIn.landed.headers.get('x-oidc-access-token') as string;
        expect(await introspect(r, token)).toMatchObject({ active: true, sub: person.identityId });
      }));

    it('refreshes before expiry (OIDCRefreshAccessTokenBeforeExpiry), on each request here', () =>
      withLog(apache, async () => {
        const one = await protectedPage();
        const two = await protectedPage();
        expect(one.status).toBe(200);
        expect(two.status).toBe(200);
        const first = one.headers.get('x-oidc-access-token') as string;
        const second = two.headers.get('x-oidc-access-token') as string;
        expect(first).toBeTruthy();
        expect(second).toBeTruthy();
        expect(second).not.toBe(first);
        expect(two.headers.get('x-oidc-sub')).toBe(person.identityId);
        expect(two.headers.get('x-oidc-email')).toBe(person.email);
        expect(await introspect(r, second)).toMatchObject({ active: true, sub: person.identityId });
        expect(refusedRefreshes()).toBe(0);
      }));

    it('logs out at the provider (RP-initiated): back at Apache signed out', () =>
      withLog(apache, async () => {
        const token = (await protectedPage()).headers.get('x-oidc-access-token') as string;
        const { start, end } = await rpLogout(r, jar);
        // mod_auth_openidc 2.4.12 keeps no ID token in a cookie session, so it sends no
        // id_token_hint; the client_id comes from OIDCProviderEndSessionEndpoint (apache2.conf).
        const request = new URL(start.trail[1].slice('GET '.length));
        expect(request.searchParams.get('id_token_hint')).toBeNull();
        expect(request.searchParams.get('client_id')).toBe(r.clientId);
        expect(request.searchParams.get('post_logout_redirect_uri')).toBe(r.signedOut);
        expect(end.status, end.trail.join('\n')).toBe(200);
        expect(end.url.origin + end.url.pathname).toBe(r.signedOut);
        expect((await introspect(r, token)).active).toBe(false);
        const again = await visit(jar, `${r.origin}/protected/`);
        expect(again.url.hash, again.trail.join('\n')).toMatch(/^#\/authorize\//);
      }));

    // mod_auth_openidc finds back-channel logouts' sessions in its server-side cache: a cookie
    // session is not there (docs/oidc.md, Relying parties tested). The grant has ended all the
    // same, so the next refresh is refused and logout_on_error ends the Apache session.
    it('cannot end a cookie session by back-channel logout; the refused refresh that follows does', () =>
      withLog(apache, async () => {
        const browser = new CookieJar();
        const { person: p } = await signInAt(r, browser);
        const api = await signIn(f.t.app, p);
        const out = await f.t.app.inject({
          method: 'POST',
          url: '/api/v1/sign-outs/everywhere',
          headers: bearer(api.accessToken),
        });
        expect(out.statusCode).toBe(204);
        const notFound = () =>
          apache
            .log()
            .split('could not (or no longer) find a session based on sid/sub provided in logout token')
            .length - 1;
        const before = notFound();
        await f.t.ctx.oidc.sweep();
        expect(f.t.logs()).not.toContain('back-channel logout not delivered');
        expect(notFound()).toBe(before + 1);

        const refused = refusedRefreshes();
        const after = await navigate(`${r.origin}/protected/`, browser);
        expect(refusedRefreshes()).toBe(refused + 1);
        expect(after.status).toBe(302);
        expect(after.headers.get('x-oidc-sub')).toBeNull();
        const again = await visit(browser, `${r.origin}/protected/`);
        expect(again.url.hash, again.trail.join('\n')).toMatch(/^#\/authorize\//);
      }));

    // A refresh made while serving the info hook never reaches the cookie: the next request
    // presents the spent refresh token, which the provider takes for a replay and ends the grant
    // (docs/oidc.md, Grants). Recorded here so that a change on either side shows.
    it('loses a refresh made by its info hook: the next refresh is a replay, the grant ends', () =>
      withLog(apache, async () => {
        const browser = new CookieJar();
        const { person: p } = await signInAt(r, browser);
        const res = await navigate(`${r.redirectUri}?info=json`, browser);
        expect(res.status).toBe(200);
        const fromHook = (JSON.parse(res.body) as { access_token: string }).access_token;
        expect(await introspect(r, fromHook)).toMatchObject({ active: true, sub: p.identityId });
        const refused = refusedRefreshes();
        const after = await navigate(`${r.origin}/protected/`, browser);
        expect(refusedRefreshes()).toBe(refused + 1);
        expect(apache.log()).toContain('response contained an "error" entry with value: ""invalid_grant""');
        expect(after.status).toBe(302);
        expect((await introspect(r, fromHook)).active).toBe(false);
      }));
  });

  describe('set-up 3: the authorization request sent by POST (OIDCProviderAuthRequestMethod POST)', () => {
    let apache: Apache;
    let r: Rp;
    beforeAll(async () => {
      r = rps.AUTH_POST;
      apache = await startApache(r, f.origin);
    });
    afterAll(async () => {
      await apache?.stop();
    });

    // The provider answers the form's POST with a 303 to the same request by GET (docs/oidc.md,
    // "POST to the authorization and end-session endpoints"), so the browser's trail shows both.
    it('signs in: Apache answers a form that posts the request to /oidc/auth', () =>
      withLog(apache, async () => {
        const jar = new CookieJar();
        const { person, landed } = await signInAt(r, jar);
        expect(landed.trail[1]).toBe(`POST ${f.origin}/oidc/auth`);
        const session = await info(r, jar);
        expect(session.id_token.sub).toBe(person.identityId);
        expect(session.userinfo).toMatchObject({ email: person.email });
      }));
  });
});
