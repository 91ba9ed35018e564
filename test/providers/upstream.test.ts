import { createHash, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityProviderConfig } from '../../src/config.js';
import {
  type OutboundFetch,
  type UpstreamChecks,
  UpstreamError,
  type UpstreamFailure,
  UpstreamProviders,
} from '../../src/features/providers/upstream.js';
import { freePort } from '../helpers/net.js';
import {
  type CallbackArrival,
  callbackRequest,
  followToCallback,
  type GitHubFake,
  hostMappingFetch,
  startGitHub,
  startUpstream,
  type Upstream,
} from '../helpers/upstream.js';

const ORIGIN = 'https://id.example.test';
const CLIENT_ID = 'identity-service';
const CLIENT_SECRET = `secret-${'z'.repeat(40)}`;
const TENANT_A = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const TENANT_B = '4b2462a4-bbee-495a-a0e1-f23ae524cc9c';
const ENTRA_TEMPLATE = 'https://login.microsoftonline.com/{tenantid}/v2.0';
const entraIssuer = (tid: string) => `https://login.microsoftonline.com/${tid}/v2.0`;
const APPLE_TEAM = 'TEAM123456';
const APPLE_KEY_ID = 'KEY1234567';

const callbackOf = (name: string) => `${ORIGIN}/api/v1/providers/${name}/callback`;
let counter = 0;
/** Fresh checks as a flow would seal them (43-character verifier, like opaqueToken()). */
function freshChecks(): UpstreamChecks {
  counter++;
  const pad = (s: string) => (s + 'x'.repeat(43)).slice(0, 43);
  return {
    state: pad(`state${counter}`),
    nonce: pad(`nonce${counter}`),
    codeVerifier: pad(`verifier${counter}`),
  };
}

function redirect(extra: Partial<NonNullable<IdentityProviderConfig['redirect']>> = {}) {
  return {
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    scopes: 'openid email profile',
    responseMode: 'query' as const,
    autoLink: 'off' as const,
    signUp: true,
    ...extra,
  };
}

/** Log lines, to check what a failure leaves in them. */
function capturingLog(): { log: FastifyBaseLogger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream) as unknown as FastifyBaseLogger, lines };
}

async function failureOf(promise: Promise<unknown>): Promise<UpstreamFailure | 'succeeded' | 'other'> {
  try {
    await promise;
    return 'succeeded';
  } catch (err) {
    return err instanceof UpstreamError ? err.reason : 'other';
  }
}

describe('UpstreamProviders against fake upstreams', () => {
  const { log, lines } = capturingLog();
  const hosts: Record<string, string> = {};
  const outbound: OutboundFetch = hostMappingFetch(hosts);
  const appleKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const otherAppleKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let generic: Upstream;
  let google: Upstream;
  let entra: Upstream;
  let apple: Upstream;
  let remote: Upstream;
  let github: GitHubFake;
  let closedPort: number;
  let providers: UpstreamProviders;

  const client = (...names: string[]) => ({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: names.map(callbackOf),
  });

  beforeAll(async () => {
    closedPort = await freePort();
    generic = await startUpstream({
      ...client('acme'),
      accounts: {
        alice: { email: 'Alice@Example.com', email_verified: true, name: 'Alice Liddell' },
        bob: { email: 'bob@example.com', name: 'Bob' },
        carol: {
          email: 'carol@example.com',
          email_verified: 'true',
          given_name: 'Carol',
          family_name: 'Ann',
        },
      },
    });
    google = await startUpstream({
      issuer: 'https://accounts.google.com',
      ...client('google'),
      accounts: { '1057': { email: 'g@gmail.com', email_verified: true, name: 'Gee' } },
    });
    entra = await startUpstream({
      issuer: entraIssuer(TENANT_A),
      pathPrefix: '/common/v2.0',
      discovery: (document) => ({ ...document, issuer: ENTRA_TEMPLATE }),
      omitIssParameter: true,
      ...client('microsoft', 'microsoft-any'),
      accounts: {
        'entra-a': {
          tid: TENANT_A,
          oid: '00000000-0000-0000-66f3-3332eca7ea81',
          email: 'ann@contoso.com',
          xms_edov: true,
          name: 'Ann',
        },
        'entra-unverified': {
          tid: TENANT_A,
          oid: '11111111-0000-0000-66f3-3332eca7ea81',
          email: 'ceo@victim.example',
          name: 'Not The CEO',
        },
        'entra-b': { tid: TENANT_B, oid: '22222222-0000-0000-66f3-3332eca7ea81', email: 'b@fabrikam.com' },
      },
    });
    apple = await startUpstream({
      issuer: 'https://appleid.apple.com',
      ...client('apple', 'apple-wrong-key'),
      appleSecret: { publicKey: appleKeys.publicKey, teamId: APPLE_TEAM, keyId: APPLE_KEY_ID },
      accounts: {
        '001234.abcd': {
          email: 'xyz@privaterelay.appleid.com',
          email_verified: 'true',
          is_private_email: 'true',
        },
        '009999.efgh': { email: 'unverified@icloud.com', email_verified: 'false' },
      },
    });
    remote = await startUpstream({
      issuer: 'https://idp.example.test',
      ...client('remote'),
      accounts: { dora: { email: 'dora@example.test', email_verified: true } },
    });
    github = await startGitHub({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
    Object.assign(hosts, {
      'accounts.google.com': google.origin,
      'login.microsoftonline.com': entra.origin,
      'appleid.apple.com': apple.origin,
      'github.com': github.origin,
      'api.github.com': github.origin,
      'idp.example.test': `http://127.0.0.1:${closedPort}`,
    });
    const applePem = (key: typeof appleKeys.privateKey) =>
      key.export({ type: 'pkcs8', format: 'pem' }) as string;
    const identityProviders: IdentityProviderConfig[] = [
      { name: 'acme', displayName: 'Acme', issuer: generic.issuer, redirect: redirect() },
      { name: 'remote', displayName: 'Remote', issuer: 'https://idp.example.test', redirect: redirect() },
      {
        name: 'google',
        displayName: 'Google',
        preset: 'google',
        issuer: 'https://accounts.google.com',
        redirect: redirect(),
      },
      {
        name: 'microsoft',
        displayName: 'Microsoft',
        preset: 'microsoft',
        issuer: 'https://login.microsoftonline.com/common/v2.0',
        redirect: redirect({ tenants: [TENANT_A] }),
      },
      {
        name: 'microsoft-any',
        displayName: 'Microsoft (any tenant)',
        preset: 'microsoft',
        issuer: 'https://login.microsoftonline.com/common/v2.0',
        redirect: redirect(),
      },
      ...(['apple', 'apple-wrong-key'] as const).map(
        (name): IdentityProviderConfig => ({
          name,
          displayName: 'Apple',
          preset: 'apple',
          issuer: 'https://appleid.apple.com',
          redirect: {
            ...redirect({ scopes: 'openid email name', responseMode: 'form_post' }),
            clientSecret: undefined,
            apple: {
              teamId: APPLE_TEAM,
              keyId: APPLE_KEY_ID,
              privateKey: applePem(name === 'apple' ? appleKeys.privateKey : otherAppleKey.privateKey),
            },
          },
        }),
      ),
      {
        name: 'github',
        displayName: 'GitHub',
        preset: 'github',
        redirect: redirect({ scopes: 'read:user user:email' }),
      },
      // The ID-token path only: not offered for redirect sign-in.
      {
        name: 'tokens-only',
        displayName: 'Tokens',
        issuer: 'https://tokens.example.test',
        audience: 'x',
        jwksUri: 'https://tokens.example.test/jwks',
      },
    ];
    providers = new UpstreamProviders({
      config: { identityProviders, publicOrigin: ORIGIN, production: false },
      log,
      fetch: outbound,
    });
  });

  afterAll(async () => {
    await Promise.all([generic, google, entra, apple, remote, github].map((fake) => fake?.close()));
  });

  /** Starts a flow, plays the browser at the upstream, and answers where it was sent back. */
  async function toCallback(
    name: string,
    checks = freshChecks(),
  ): Promise<{ arrival: CallbackArrival; checks: UpstreamChecks; url: URL }> {
    const url = await providers.authorizationUrl(name, checks);
    const arrival = await followToCallback(url, { callback: providers.redirectUri(name), fetch: outbound });
    return { arrival, checks, url };
  }

  async function signIn(name: string) {
    const { arrival, checks } = await toCallback(name);
    return providers.complete(name, callbackRequest(arrival), checks);
  }

  it('lists the redirect-capable providers in order, and their redirect URIs', () => {
    expect(providers.list().map((p) => [p.name, p.preset])).toEqual([
      ['acme', null],
      ['remote', null],
      ['google', 'google'],
      ['microsoft', 'microsoft'],
      ['microsoft-any', 'microsoft'],
      ['apple', 'apple'],
      ['apple-wrong-key', 'apple'],
      ['github', 'github'],
    ]);
    expect(providers.get('tokens-only')).toBeUndefined();
    expect(providers.get('google')?.displayName).toBe('Google');
    expect(providers.redirectUri('acme')).toBe('https://id.example.test/api/v1/providers/acme/callback');
  });

  describe('any OpenID provider found by discovery', () => {
    it('signs in with PKCE S256, state and nonce, and discovers once', async () => {
      generic.login = 'alice';
      const before = generic.requests.filter((r) => r.includes('/.well-known/openid-configuration')).length;
      const checks = freshChecks();
      const { arrival, url } = await toCallback('acme', checks);
      const q = url.searchParams;
      expect(url.origin).toBe(generic.origin);
      expect(q.get('response_type')).toBe('code');
      expect(q.get('client_id')).toBe(CLIENT_ID);
      expect(q.get('redirect_uri')).toBe(callbackOf('acme'));
      expect(q.get('scope')).toBe('openid email profile');
      expect(q.get('state')).toBe(checks.state);
      expect(q.get('nonce')).toBe(checks.nonce);
      expect(q.get('code_challenge_method')).toBe('S256');
      expect(q.get('code_challenge')).toBe(
        createHash('sha256').update(checks.codeVerifier).digest('base64url'),
      );
      expect(q.has('response_mode')).toBe(false);
      expect(arrival.method).toBe('GET');

      const identity = await providers.complete('acme', callbackRequest(arrival), checks);
      expect(identity).toEqual({
        subject: 'alice',
        email: 'Alice@Example.com',
        emailVerified: true,
        name: 'Alice Liddell',
      });

      await signIn('acme');
      const after = generic.requests.filter((r) => r.includes('/.well-known/openid-configuration')).length;
      expect(before).toBe(0);
      expect(after).toBe(1);
    });

    it('trusts an email only when email_verified is true (not absent, not the string "true")', async () => {
      generic.login = 'bob';
      expect(await signIn('acme')).toEqual({
        subject: 'bob',
        email: 'bob@example.com',
        emailVerified: false,
        name: 'Bob',
      });
      generic.login = 'carol';
      expect(await signIn('acme')).toEqual({
        subject: 'carol',
        email: 'carol@example.com',
        emailVerified: false,
        name: 'Carol Ann',
        givenName: 'Carol',
        familyName: 'Ann',
      });
    });

    it('takes the email from UserInfo when the ID token leaves it out', async () => {
      const conforming = await startUpstream({
        ...client('conforming'),
        conformIdTokenClaims: true,
      });
      conforming.setAccount({ sub: 'erin', email: 'erin@example.com', email_verified: true, name: 'Erin' });
      try {
        const own = new UpstreamProviders({
          config: {
            identityProviders: [
              { name: 'conforming', displayName: 'C', issuer: conforming.issuer, redirect: redirect() },
            ],
            publicOrigin: ORIGIN,
            production: false,
          },
          log,
          fetch: outbound,
        });
        const checks = freshChecks();
        const url = await own.authorizationUrl('conforming', checks);
        const arrival = await followToCallback(url, {
          callback: own.redirectUri('conforming'),
          fetch: outbound,
        });
        expect(await own.complete('conforming', callbackRequest(arrival), checks)).toEqual({
          subject: 'erin',
          email: 'erin@example.com',
          emailVerified: true,
          name: 'Erin',
        });
        expect(conforming.requests.some((r) => r.startsWith('GET /me'))).toBe(true);
      } finally {
        await conforming.close();
      }
    });

    it('refuses a callback whose state is not the flow’s, before any code is exchanged', async () => {
      generic.login = 'alice';
      const { arrival, checks } = await toCallback('acme');
      const tokenRequests = generic.requests.filter((r) => r.startsWith('POST /token')).length;
      const outcome = await failureOf(
        providers.complete('acme', callbackRequest(arrival), { ...checks, state: freshChecks().state }),
      );
      expect(outcome).toBe('refused');
      expect(generic.requests.filter((r) => r.startsWith('POST /token')).length).toBe(tokenRequests);
    });

    it('refuses an ID token whose nonce is not the flow’s, and logs neither code nor token', async () => {
      generic.login = 'alice';
      const { arrival, checks } = await toCallback('acme');
      const code = new URL(arrival.url).searchParams.get('code') ?? '';
      expect(code.length).toBeGreaterThan(10);
      const from = lines.length;
      const outcome = await failureOf(
        providers.complete('acme', callbackRequest(arrival), { ...checks, nonce: freshChecks().nonce }),
      );
      expect(outcome).toBe('refused');
      const logged = lines.slice(from).join('\n');
      expect(logged).toContain('"reason":"refused"');
      expect(logged).not.toContain(code);
      expect(logged).not.toContain(checks.nonce);
      expect(logged).not.toContain('eyJ');
    });

    it('refuses a code exchanged with another PKCE verifier', async () => {
      generic.login = 'alice';
      const { arrival, checks } = await toCallback('acme');
      const outcome = await failureOf(
        providers.complete('acme', callbackRequest(arrival), {
          ...checks,
          codeVerifier: freshChecks().codeVerifier,
        }),
      );
      expect(outcome).toBe('refused');
    });

    it('refuses a replayed callback (the code was used)', async () => {
      generic.login = 'alice';
      const { arrival, checks } = await toCallback('acme');
      expect((await providers.complete('acme', callbackRequest(arrival), checks)).subject).toBe('alice');
      expect(await failureOf(providers.complete('acme', callbackRequest(arrival), checks))).toBe('refused');
    });

    it('answers cancelled when the person declines at the provider', async () => {
      generic.deny = true;
      const { arrival, checks } = await toCallback('acme');
      expect(new URL(arrival.url).searchParams.get('error')).toBe('access_denied');
      expect(await failureOf(providers.complete('acme', callbackRequest(arrival), checks))).toBe('cancelled');
    });

    it('refuses a callback of the wrong shape (a POST for a query provider)', async () => {
      const request = new Request(callbackOf('acme'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'code=x&state=y',
      });
      expect(await failureOf(providers.complete('acme', request, freshChecks()))).toBe('refused');
      expect(await failureOf(providers.complete('nobody', request, freshChecks()))).toBe('refused');
      expect(await failureOf(providers.authorizationUrl('nobody', freshChecks()))).toBe('unavailable');
    });

    it('answers unavailable while the provider is down, and discovers again once it is back', async () => {
      hosts['idp.example.test'] = `http://127.0.0.1:${closedPort}`;
      expect(await failureOf(providers.authorizationUrl('remote', freshChecks()))).toBe('unavailable');
      hosts['idp.example.test'] = remote.origin;
      remote.login = 'dora';
      const { arrival, checks } = await toCallback('remote');
      // Down again between the authorization and the callback: the code cannot be exchanged.
      hosts['idp.example.test'] = `http://127.0.0.1:${closedPort}`;
      expect(await failureOf(providers.complete('remote', callbackRequest(arrival), checks))).toBe(
        'unavailable',
      );
      hosts['idp.example.test'] = remote.origin;
      expect(await signIn('remote')).toMatchObject({
        subject: 'dora',
        email: 'dora@example.test',
        emailVerified: true,
      });
    });

    it('answers unavailable when the provider answers 5xx pages instead of OAuth', async () => {
      const broken = createServer((_req, res) => {
        res.writeHead(503, { 'content-type': 'text/html' }).end('<h1>Service Unavailable</h1>');
      });
      await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
      try {
        remote.login = 'dora';
        const { arrival, checks } = await toCallback('remote');
        hosts['idp.example.test'] = `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
        expect(await failureOf(providers.complete('remote', callbackRequest(arrival), checks))).toBe(
          'unavailable',
        );
      } finally {
        hosts['idp.example.test'] = remote.origin;
        await new Promise<void>((resolve) => broken.close(() => resolve()));
      }
    });
  });

  describe('Google', () => {
    it('accepts the ID token issuer spelled https://accounts.google.com', async () => {
      google.tokenIssuer = undefined;
      const { arrival, checks, url } = await toCallback('google');
      expect(url.origin).toBe('https://accounts.google.com');
      const idToken = await providers.complete('google', callbackRequest(arrival), checks);
      expect(idToken).toEqual({ subject: '1057', email: 'g@gmail.com', emailVerified: true, name: 'Gee' });
    });

    it('accepts the ID token issuer spelled accounts.google.com', async () => {
      google.tokenIssuer = 'accounts.google.com';
      try {
        const tokens = google.requests.filter((r) => r.startsWith('POST /token')).length;
        expect(await signIn('google')).toEqual({
          subject: '1057',
          email: 'g@gmail.com',
          emailVerified: true,
          name: 'Gee',
        });
        // The token response was checked twice, but the code was sent once.
        expect(google.requests.filter((r) => r.startsWith('POST /token')).length).toBe(tokens + 1);
      } finally {
        google.tokenIssuer = undefined;
      }
    });

    it('refuses any other issuer spelling', async () => {
      google.tokenIssuer = 'https://accounts.google.com.evil.example';
      try {
        expect(await failureOf(signIn('google'))).toBe('refused');
      } finally {
        google.tokenIssuer = undefined;
      }
    });

    it('refuses a nonce mismatch with the bare issuer too', async () => {
      google.tokenIssuer = 'accounts.google.com';
      try {
        const { arrival, checks } = await toCallback('google');
        const outcome = await failureOf(
          providers.complete('google', callbackRequest(arrival), { ...checks, nonce: freshChecks().nonce }),
        );
        expect(outcome).toBe('refused');
      } finally {
        google.tokenIssuer = undefined;
      }
    });
  });

  describe('Microsoft Entra', () => {
    it('resolves the {tenantid} issuer from tid and keys the identity on tid and oid', async () => {
      entra.login = 'entra-a';
      entra.tokenIssuer = entraIssuer(TENANT_A);
      const identity = await signIn('microsoft');
      expect(identity).toEqual({
        subject: `${TENANT_A}:00000000-0000-0000-66f3-3332eca7ea81`,
        email: 'ann@contoso.com',
        emailVerified: true,
        name: 'Ann',
      });
      expect(entra.requests).toContain('GET /common/v2.0/.well-known/openid-configuration');
    });

    it('never trusts an email Entra does not assert verified', async () => {
      entra.login = 'entra-unverified';
      entra.tokenIssuer = entraIssuer(TENANT_A);
      expect(await signIn('microsoft')).toMatchObject({ email: 'ceo@victim.example', emailVerified: false });
    });

    it('refuses a tenant outside the allow-list (which any-tenant provider accepts)', async () => {
      entra.login = 'entra-b';
      entra.tokenIssuer = entraIssuer(TENANT_B);
      expect(await failureOf(signIn('microsoft'))).toBe('refused');
      expect(await signIn('microsoft-any')).toMatchObject({
        subject: `${TENANT_B}:22222222-0000-0000-66f3-3332eca7ea81`,
      });
    });

    it('refuses an ID token whose issuer is not its own tenant’s', async () => {
      entra.login = 'entra-a';
      entra.tokenIssuer = entraIssuer(TENANT_B);
      expect(await failureOf(signIn('microsoft-any'))).toBe('refused');
      entra.tokenIssuer = entraIssuer(TENANT_A);
    });
  });

  describe('Apple', () => {
    it('uses form_post, a minted ES256 client secret, email_verified "true", and the name from the first callback only', async () => {
      apple.login = '001234.abcd';
      apple.appleUser = {
        name: { firstName: 'Ada', lastName: 'Lovelace' },
        email: 'xyz@privaterelay.appleid.com',
      };
      const first = await toCallback('apple');
      expect(first.url.searchParams.get('response_mode')).toBe('form_post');
      expect(first.arrival.method).toBe('POST');
      expect(await providers.complete('apple', callbackRequest(first.arrival), first.checks)).toEqual({
        subject: '001234.abcd',
        email: 'xyz@privaterelay.appleid.com',
        emailVerified: true,
        name: 'Ada Lovelace',
        givenName: 'Ada',
        familyName: 'Lovelace',
      });
      expect(apple.appleSecrets).toHaveLength(1);
      const secret = apple.appleSecrets[0] ?? '';
      expect(decodeProtectedHeader(secret)).toMatchObject({ alg: 'ES256', kid: APPLE_KEY_ID });
      const claims = decodeJwt(secret);
      expect(claims).toMatchObject({ iss: APPLE_TEAM, sub: CLIENT_ID, aud: 'https://appleid.apple.com' });
      expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBeLessThanOrEqual(600);

      // Apple sends `user` on the first authorization only: later the name is unknown.
      const again = await signIn('apple');
      expect(again).toMatchObject({ subject: '001234.abcd', emailVerified: true, name: null });
      // The minted secret is reused while it lives.
      expect(apple.appleSecrets).toEqual([secret, secret]);
    });

    it('does not trust email_verified "false"', async () => {
      apple.login = '009999.efgh';
      expect(await signIn('apple')).toMatchObject({ email: 'unverified@icloud.com', emailVerified: false });
    });

    it('cannot exchange a code with a secret signed by another key (the fake checks it)', async () => {
      apple.login = '001234.abcd';
      expect(await failureOf(signIn('apple-wrong-key'))).toBe('unavailable');
    });

    it('refuses a form_post callback that arrives as a GET', async () => {
      apple.login = '001234.abcd';
      const { arrival, checks } = await toCallback('apple');
      if (arrival.method !== 'POST') throw new Error('expected a form_post');
      const asQuery = new URL(arrival.url);
      for (const [k, v] of arrival.form) asQuery.searchParams.append(k, v);
      expect(await failureOf(providers.complete('apple', new Request(asQuery), checks))).toBe('refused');
    });
  });

  describe('GitHub', () => {
    it('keys on the numeric id and takes only a verified primary email', async () => {
      github.emails = [
        { email: 'old@example.com', primary: false, verified: true },
        { email: 'octo@example.com', primary: true, verified: true },
      ];
      const { arrival, checks, url } = await toCallback('github');
      expect(url.origin + url.pathname).toBe('https://github.com/login/oauth/authorize');
      expect(url.searchParams.has('nonce')).toBe(false);
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');
      expect(url.searchParams.get('scope')).toBe('read:user user:email');
      expect(await providers.complete('github', callbackRequest(arrival), checks)).toEqual({
        subject: '1234567',
        email: 'octo@example.com',
        emailVerified: true,
        name: 'The Octocat',
      });
    });

    it('gives no email when the primary one is unverified, or the list is refused', async () => {
      github.emails = [
        { email: 'verified-secondary@example.com', primary: false, verified: true },
        { email: 'unverified-primary@example.com', primary: true, verified: false },
      ];
      expect(await signIn('github')).toEqual({
        subject: '1234567',
        email: null,
        emailVerified: false,
        name: 'The Octocat',
      });
      github.emailsStatus = 403;
      try {
        expect(await signIn('github')).toMatchObject({ email: null, emailVerified: false });
      } finally {
        github.emailsStatus = 200;
      }
    });

    it('refuses a state mismatch, a replayed code, and answers cancelled on access_denied', async () => {
      github.emails = [{ email: 'octo@example.com', primary: true, verified: true }];
      const { arrival, checks } = await toCallback('github');
      const wrongState = await failureOf(
        providers.complete('github', callbackRequest(arrival), { ...checks, state: freshChecks().state }),
      );
      expect(wrongState).toBe('refused');
      expect((await providers.complete('github', callbackRequest(arrival), checks)).subject).toBe('1234567');
      expect(await failureOf(providers.complete('github', callbackRequest(arrival), checks))).toBe('refused');
      github.deny = true;
      const denied = await toCallback('github');
      expect(
        await failureOf(providers.complete('github', callbackRequest(denied.arrival), denied.checks)),
      ).toBe('cancelled');
    });
  });
});
