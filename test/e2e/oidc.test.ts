import { createServer, type Server } from 'node:http';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';

/*
 * The OpenID Provider end to end in Chromium: a relying party built on openid-client 6 (served
 * here, on loopback) sends the browser to the service, the hosted pages sign the person in and ask
 * for consent (a third-party client), the RP gets tokens, userinfo and a refresh; RP-initiated
 * logout ends the hosted session; then, signed in again, "Sign out everywhere" in the account UI
 * ends the RP's grant and the RP's back-channel endpoint receives a valid logout token.
 */
interface Rp {
  server: Server;
  origin: string;
  config: client.Configuration;
  tokens?: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
  logoutTokens: string[];
}

const SECRET = `rp-${'s'.repeat(40)}`;
let t: TestApp;
let browser: Browser;
let page: Page;
let origin: string;
let rp: Rp;
let person: Person;

async function startRp(port: number, issuer: string): Promise<Rp> {
  const state: { verifier?: string; state?: string; nonce?: string } = {};
  const self: Rp = {
    server: createServer(),
    origin: `http://127.0.0.1:${port}`,
    config: undefined as never,
    logoutTokens: [],
  };
  self.server.on('request', async (req, res) => {
    const url = new URL(req.url ?? '/', self.origin);
    try {
      if (url.pathname === '/login') {
        state.verifier = client.randomPKCECodeVerifier();
        state.state = client.randomState();
        state.nonce = client.randomNonce();
        const to = client.buildAuthorizationUrl(self.config, {
          redirect_uri: `${self.origin}/callback`,
          scope: url.searchParams.get('scope') ?? 'openid email',
          code_challenge: await client.calculatePKCECodeChallenge(state.verifier),
          code_challenge_method: 'S256',
          state: state.state,
          nonce: state.nonce,
          ...(url.searchParams.has('prompt') ? { prompt: url.searchParams.get('prompt') as string } : {}),
        });
        res.writeHead(302, { location: to.href }).end();
      } else if (url.pathname === '/callback') {
        self.tokens = await client.authorizationCodeGrant(self.config, url, {
          pkceCodeVerifier: state.verifier,
          expectedState: state.state,
          expectedNonce: state.nonce,
        });
        const claims = self.tokens.claims();
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<h1>Signed in</h1><p id="sub">${claims?.sub}</p>`);
      } else if (url.pathname === '/logout') {
        const to = client.buildEndSessionUrl(self.config, {
          id_token_hint: self.tokens?.id_token as string,
          post_logout_redirect_uri: `${self.origin}/signed-out`,
        });
        res.writeHead(302, { location: to.href }).end();
      } else if (url.pathname === '/logo.svg') {
        res
          .writeHead(200, { 'content-type': 'image/svg+xml' })
          .end(
            '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40"/></svg>',
          );
      } else if (url.pathname === '/signed-out') {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Signed out of the RP</h1>');
      } else if (url.pathname === '/backchannel' && req.method === 'POST') {
        let body = '';
        for await (const chunk of req) body += chunk;
        const token = new URLSearchParams(body).get('logout_token');
        if (token) self.logoutTokens.push(token);
        res.writeHead(200).end();
      } else {
        res.writeHead(404).end();
      }
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    }
  });
  await new Promise<void>((r) => self.server.listen(port, '127.0.0.1', r));
  self.config = await client.discovery(new URL(issuer), 'partner', SECRET, client.ClientSecretBasic(SECRET), {
    execute: [client.allowInsecureRequests],
  });
  return self;
}

beforeAll(async () => {
  const port = await freePort();
  const rpPort = await freePort();
  origin = `http://localhost:${port}`;
  const rpOrigin = `http://127.0.0.1:${rpPort}`;
  t = await createTestApp({
    clock: new ManualClock(new Date()),
    env: {
      ACCOUNT_UI: 'on',
      PUBLIC_ORIGIN: origin,
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: 'partner',
          client_secret: SECRET,
          client_name: 'Partner Reports',
          redirect_uris: [`${rpOrigin}/callback`],
          post_logout_redirect_uris: [`${rpOrigin}/signed-out`],
          grant_types: ['authorization_code', 'refresh_token'],
          backchannel_logout_uri: `${rpOrigin}/backchannel`,
          // Display metadata (RFC 7591): the logo from the RP's own origin, which the pages' CSP
          // then allows, and the links the consent page shows.
          logo_uri: `${rpOrigin}/logo.svg`,
          client_uri: `${rpOrigin}/`,
          policy_uri: `${rpOrigin}/privacy`,
          tos_uri: `${rpOrigin}/terms`,
        },
        {
          client_id: 'tv',
          client_name: 'Living Room TV',
          token_endpoint_auth_method: 'none',
          grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        },
      ]),
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  rp = await startRp(rpPort, origin);
  person = await createPerson(t.ctx);
  browser = await launchChromium();
  page = await (await browser.newContext()).newPage();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((r) => (rp ? rp.server.close(() => r()) : r()));
  await t?.close();
});

async function signInOnHostedPage(p: Page) {
  await p.getByLabel('Email or phone number').fill(person.email);
  await p.getByLabel('Password', { exact: true }).fill(person.password);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
}

describe('an app signs a person in through the hosted pages', () => {
  it('sign-in, consent, tokens, userinfo, refresh', async () => {
    await page.goto(`${rp.origin}/login`);
    await page.waitForURL(/\/account\/#\/authorize\//);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Sign in to continue to Partner Reports');
    await signInOnHostedPage(page);
    await page.waitForURL(/\/account\/#\/consent\//);
    await expect.poll(() => page.locator('#scopes').textContent()).toContain('Your email address');
    // The client's logo is loaded (the CSP let it through) and its links open apart, safely.
    const logo = page.locator('#client-logo');
    expect(await logo.getAttribute('src')).toBe(`${rp.origin}/logo.svg`);
    await expect
      .poll(() =>
        logo.evaluate((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth),
      )
      .toBe(40);
    for (const [id, path, text] of [
      ['client-uri', '/', 'Website'],
      ['policy-uri', '/privacy', 'Privacy policy'],
      ['tos-uri', '/terms', 'Terms of service'],
    ]) {
      const link = page.locator(`#${id}`);
      expect(await link.getAttribute('href')).toBe(`${rp.origin}${path}`);
      expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
      expect(await link.getAttribute('target')).toBe('_blank');
      expect(await link.textContent()).toContain(text);
    }
    // The consent on the sign-in page's centred card (issue 46).
    const card = await page.locator('main > .sign-in-card').boundingBox();
    const viewport = page.viewportSize()?.width ?? 1280;
    expect(card?.width ?? 0).toBeLessThanOrEqual(440);
    expect(card?.width ?? 0).toBeGreaterThanOrEqual(320);
    expect(Math.abs((card?.x ?? 0) + (card?.width ?? 0) / 2 - viewport / 2)).toBeLessThan(20);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${rp.origin}/callback?**`);
    expect(await page.locator('#sub').textContent()).toBe(person.identityId);

    const tokens = rp.tokens as NonNullable<Rp['tokens']>;
    expect(tokens.claims()?.amr).toEqual(['pwd']);
    const info = await client.fetchUserInfo(rp.config, tokens.access_token, person.identityId);
    expect(info).toMatchObject({ sub: person.identityId, email: person.email, email_verified: true });
    const renewed = await client.refreshTokenGrant(rp.config, tokens.refresh_token as string);
    expect(renewed.access_token).toBeTruthy();
    // No token ever reached the browser's address bar.
    expect(page.url()).not.toContain(tokens.access_token);
  });

  it('the consent says who is signed in; "Not you?" lets another account sign in and consent for itself', async () => {
    const first = await createPerson(t.ctx);
    const second = await createPerson(t.ctx);
    const other = await (await browser.newContext()).newPage();
    const masked = (email: string) => `${email[0]}***@${email.split('@')[1]}`;
    const signInAs = async (who: Person) => {
      await other.getByLabel('Email or phone number').fill(who.email);
      await other.getByLabel('Password', { exact: true }).fill(who.password);
      await other.getByRole('button', { name: 'Sign in', exact: true }).click();
    };
    await other.goto(`${rp.origin}/login?scope=${encodeURIComponent('openid email organization')}`);
    await other.waitForURL(/\/account\/#\/authorize\//);
    await signInAs(first);
    await other.waitForURL(/\/account\/#\/consent\//);
    await expect.poll(() => other.locator('#signed-in-as').textContent()).toContain(masked(first.email));
    expect(await other.locator('#shared-organization').textContent()).toBe(
      'Partner Reports asks for your organization, but you are not working in one now.',
    );
    await axeCheck(other, 'consent with the signed-in account and the organization');
    await other.getByRole('button', { name: 'Not you?' }).click();
    await other.waitForURL(/\/account\/#\/authorize\//);
    await signInAs(second);
    await other.waitForURL(/\/account\/#\/consent\//);
    await expect.poll(() => other.locator('#signed-in-as').textContent()).toContain(masked(second.email));
    await other.getByRole('button', { name: 'Allow' }).click();
    await other.waitForURL(`${rp.origin}/callback?**`);
    expect(await other.locator('#sub').textContent()).toBe(second.identityId);
    await other.context().close();
  });

  it('a second sign-in continues at once: consent is remembered and the hosted session is reused', async () => {
    await page.goto(`${rp.origin}/login`);
    await page.waitForURL(`${rp.origin}/callback?**`);
    expect(await page.locator('#sub').textContent()).toBe(person.identityId);
  });

  it('prompt=login shows the sign-in form to a signed-in person, and a sign-in made at once completes', async () => {
    const before = rp.tokens?.claims()?.auth_time as number;
    // A minute later; then no time passes on the service's clock between the form and the sign-in
    // (a password manager's autofill).
    t.clock.advance(60);
    await page.goto(`${rp.origin}/login?prompt=login`);
    await page.waitForURL(/\/account\/#\/authorize\//);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Sign in to continue to Partner Reports');
    await signInOnHostedPage(page);
    // The consent is remembered: straight back to the app, signed in by the new sign-in.
    await page.waitForURL(`${rp.origin}/callback?**`);
    expect(await page.locator('#sub').textContent()).toBe(person.identityId);
    expect(rp.tokens?.claims()?.auth_time).toBe(before + 60);
  });

  it('RP-initiated logout ends the hosted session', async () => {
    await page.goto(`${rp.origin}/logout`);
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(`${rp.origin}/signed-out`);
    await page.goto(`${origin}/account/#/`);
    await page.waitForURL(/#\/sign-in$/);
    await expect(
      client.refreshTokenGrant(rp.config, rp.tokens?.refresh_token as string),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('"Connected apps" lists the app and removing its access ends its grant', async () => {
    await page.goto(`${rp.origin}/login`);
    await page.waitForURL(/\/account\/#\/authorize\//);
    await signInOnHostedPage(page);
    // The consent is remembered: no consent page this time.
    await page.waitForURL(`${rp.origin}/callback?**`);
    const tokens = rp.tokens as NonNullable<Rp['tokens']>;
    const before = rp.logoutTokens.length;
    await page.goto(`${origin}/account/#/apps`);
    await expect.poll(() => page.locator('#apps').textContent()).toContain('Partner Reports');
    expect(await page.locator('#apps').textContent()).toContain('Your email address');
    await page.getByRole('button', { name: 'Remove access for Partner Reports' }).click();
    await page.locator('#no-apps').waitFor();
    await expect(client.refreshTokenGrant(rp.config, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect(rp.logoutTokens.length).toBe(before + 1);
  });

  it('"Sign out everywhere" in the account UI ends the RP grant and sends a back-channel logout', async () => {
    await page.goto(`${rp.origin}/login`);
    // Still signed in at the hosted pages; the consent was taken back, so it is asked again.
    await page.waitForURL(/\/account\/#\/consent\//);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${rp.origin}/callback?**`);
    const tokens = rp.tokens as NonNullable<Rp['tokens']>;
    const sid = tokens.claims()?.sid;
    const before = rp.logoutTokens.length;

    await page.goto(`${origin}/account/#/devices`);
    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.waitForURL(/#\/sign-in$/);
    await expect(client.refreshTokenGrant(rp.config, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect.poll(() => rp.logoutTokens.length, { timeout: 15_000 }).toBeGreaterThan(before);
    const logout = rp.logoutTokens[rp.logoutTokens.length - 1];
    const { keys } = (await (await fetch(`${origin}/.well-known/jwks.json`)).json()) as { keys: never[] };
    const { jwtVerify, createLocalJWKSet } = await import('jose');
    const { payload } = await jwtVerify(logout, createLocalJWKSet({ keys }), {
      issuer: origin,
      audience: 'partner',
    });
    expect(payload).toMatchObject({ sub: person.identityId, sid });
    expect(payload.events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });
    expect(decodeJwt(logout).nonce).toBeUndefined();
  });

  it('a device: the person types its code on the verification page, signs in, consents; the device gets tokens', async () => {
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    const started = (await (
      await fetch(`${origin}/oidc/device/auth`, form({ client_id: 'tv', scope: 'openid email' }))
    ).json()) as { device_code: string; user_code: string; verification_uri: string };
    const devicePoll = async () => {
      t.clock.advance(5);
      const res = await fetch(
        `${origin}/oidc/token`,
        form({
          client_id: 'tv',
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
          device_code: started.device_code,
        }),
      );
      return (await res.json()) as Record<string, string>;
    };
    expect((await devicePoll()).error).toBe('authorization_pending');

    await page.goto(started.verification_uri);
    expect(await page.locator('h1').textContent()).toBe('Connect a device');
    await page.getByLabel('Code').fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('That code is not valid');
    await axeCheck(page, 'device verification, a wrong code');
    // Typed as a person might: lower case, no dash.
    await page.getByLabel('Code').fill(started.user_code.replace('-', '').toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => page.locator('code.user-code').textContent()).toBe(started.user_code);
    expect(await page.locator('main').textContent()).toContain('Living Room TV');
    await axeCheck(page, 'device confirmation');
    await page.getByRole('button', { name: 'Continue' }).click();

    // Signed out everywhere above: the hosted sign-in, then the consent of this third-party client.
    await page.waitForURL(/\/account\/#\/authorize\//);
    await signInOnHostedPage(page);
    await page.waitForURL(/\/account\/#\/consent\//);
    await page.getByRole('button', { name: 'Allow' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('You can go back to your device');
    await axeCheck(page, 'device connected');

    const tokens = await devicePoll();
    expect(tokens.access_token).toBeTruthy();
    const info = await fetch(`${origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await info.json()).toMatchObject({ sub: person.identityId, email: person.email });
  });
});
