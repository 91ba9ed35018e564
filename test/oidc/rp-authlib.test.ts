import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browse,
  type CookieJar,
  confirmLogout,
  FIRST_PARTY,
  hostedConsent,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  THIRD_PARTY,
} from '../helpers/oidc.js';

/*
 * A relying party nobody on the project wrote: Debian's python3-authlib (OAuth2Session from
 * authlib.integrations.requests_client, ID tokens through authlib.jose and authlib.oidc.core's
 * CodeIDToken), run as a child process (test/oidc/rp/authlib_client.py) that speaks a line
 * protocol with this test: it prints the authorization URL, the test signs the person in on the
 * hosted pages and writes back the URL the provider redirected to, and the script prints what each
 * later step found (docs/oidc.md, "Relying parties tested").
 */
const SCRIPT = fileURLToPath(new URL('./rp/authlib_client.py', import.meta.url));

// Debian's own interpreter first: python3-authlib installs into its dist-packages, which another
// python3 earlier on PATH (pyenv, a virtualenv) does not see.
const PYTHON = ['/usr/bin/python3', 'python3'].find(
  (p) => (p === 'python3' || existsSync(p)) && spawnSync(p, ['-c', 'import authlib, requests']).status === 0,
);
const available = PYTHON !== undefined;

const POST_LOGOUT = 'http://127.0.0.1:9/signed-out';

type Line = { step: string; [k: string]: unknown };

describe('relying party: authlib (Debian python3-authlib)', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    if (!available) return;
    f = await oidcFixture();
  });
  afterAll(async () => {
    await f?.close();
  });

  /** Runs the script for one client; the browser of `jar` signs in (and consents) when asked. */
  async function run(
    c: { id: string; secret: string },
    method: string,
    jar: CookieJar,
    { exitCode = 0, postLogout = '' } = {},
  ): Promise<Line[]> {
    const args = [SCRIPT, f.origin, c.id, c.secret, method, f.redirectUri, postLogout];
    const child = spawn(PYTHON as string, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    const lines: Line[] = [];
    try {
      for await (const text of createInterface({ input: child.stdout })) {
        const line = JSON.parse(text) as Line;
        lines.push(line);
        if (line.step === 'logout') {
          const done = await confirmLogout(f, String(line.url), jar);
          expect(done.status).toBe(303);
          child.stdin.write(`${new URL(done.headers.get('location') as string, f.origin).href}\n`);
          continue;
        }
        if (line.step !== 'authorize') continue;
        let landed = await browse(f, String(line.url), jar);
        if (landed.page?.location?.includes('#/consent/')) {
          landed = await browse(f, await hostedConsent(f, jar, landed.page.location), jar);
        }
        expect(landed.page, JSON.stringify(landed.page)).toBeUndefined();
        child.stdin.write(`${(landed.callback as URL).href}\n`);
      }
    } catch (error) {
      // A failed step leaves the script waiting on stdin: end it rather than leave it behind.
      child.kill();
      throw error;
    }
    const code = await exited;
    expect(code, `${JSON.stringify(lines)}\n${stderr}`).toBe(exitCode);
    return lines;
  }

  const byStep = (lines: Line[]) => Object.fromEntries(lines.map((l) => [l.step, l])) as Record<string, Line>;

  // Without python3 and python3-authlib (and python3-requests) there is no relying party to run:
  // skipped here, never faked. .ci/run installs them with apt-get, so CI always runs these.
  it.skipIf(!available)(
    'confidential client with client_secret_basic: code flow with PKCE, ID token, userinfo, refresh, RP-initiated logout',
    async () => {
      const { person, jar } = await hostedSignIn(f);
      const s = byStep(await run(FIRST_PARTY, 'client_secret_basic', jar, { postLogout: POST_LOGOUT }));
      expect(s.discovery).toMatchObject({ issuer: f.origin, metadata_valid: true });
      // authlib's own metadata rules refuse any http issuer: the loopback test issuer is http.
      expect(s.discovery.http_refusal).toBe('"issuer" MUST use "https" scheme');
      const url = new URL(String(s.authorize.url));
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');
      expect(url.searchParams.get('code_challenge')).toBeTruthy();
      expect(url.searchParams.get('nonce')).toBeTruthy();
      expect(s.token).toMatchObject({
        auth_method: 'client_secret_basic',
        sub: person.identityId,
        iss: f.origin,
        aud: FIRST_PARTY.id,
        nonce: url.searchParams.get('nonce'),
        has_refresh_token: true,
        scope: 'openid email',
        // The provider puts no at_hash in an ID token from the token endpoint (OPTIONAL for the
        // code flow); CodeIDToken would check one against the access token if it were there.
        has_at_hash: false,
      });
      expect(s.userinfo).toEqual({
        step: 'userinfo',
        status: 200,
        body: { sub: person.identityId, email: person.email, email_verified: true },
      });
      expect(s.refresh).toMatchObject({
        sub: person.identityId,
        sid_same: true,
        new_access_token: true,
        new_refresh_token: true,
        userinfo_status: 200,
        userinfo: { sub: person.identityId, email: person.email },
      });
      expect(s.replay).toEqual({ step: 'replay', refused: true, error: 'invalid_grant' });
      // RP-initiated logout: back at the post-logout redirect URI with the script's state, and the
      // grant is over.
      const end = new URL(String(s.logout.url));
      expect(end.origin + end.pathname).toBe(`${f.origin}/oidc/session/end`);
      expect(end.searchParams.get('post_logout_redirect_uri')).toBe(POST_LOGOUT);
      expect(s.after_logout).toMatchObject({
        returned: true,
        state_same: true,
        refresh_after_logout: 'invalid_grant',
      });
      expect(s.done).toBeTruthy();
    },
  );

  it.skipIf(!available)(
    'third-party client with client_secret_post: consent on the hosted page, then the same flow and logout',
    async () => {
      const { person, jar } = await hostedSignIn(f);
      const s = byStep(await run(THIRD_PARTY, 'client_secret_post', jar));
      expect(s.token).toMatchObject({
        auth_method: 'client_secret_post',
        sub: person.identityId,
        aud: THIRD_PARTY.id,
        has_refresh_token: true,
      });
      expect((s.userinfo.body as { sub: string }).sub).toBe(s.token.sub);
      expect(s.refresh).toMatchObject({ sub: person.identityId, userinfo_status: 200 });
      expect(s.replay).toMatchObject({ refused: true, error: 'invalid_grant' });
      // No post-logout redirect URI registered: the browser ends on the provider's page.
      expect(s.after_logout).toMatchObject({ returned: false, refresh_after_logout: 'invalid_grant' });
      const page = await fetch(String(s.after_logout.landed), { headers: { cookie: jar.header() } });
      expect(await page.text()).toContain('You are signed out');
      expect(s.done).toBeTruthy();
    },
  );

  it.skipIf(!available)(
    "a client_secret_basic client presenting its secret by post is refused, in authlib's words",
    async () => {
      // Each confidential client authenticates only by its registered method (docs/oidc.md,
      // Clients): the right secret sent the other way is refused as a wrong one is.
      const { jar } = await hostedSignIn(f);
      const lines = await run(FIRST_PARTY, 'client_secret_post', jar, { exitCode: 1 });
      expect(lines.find((l) => l.step === 'error')).toMatchObject({
        at: 'token',
        type: 'OAuthError',
        error: 'invalid_client: client authentication failed',
      });
    },
  );
});
