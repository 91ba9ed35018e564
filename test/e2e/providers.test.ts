import { createServer, type Server } from 'node:http';
import * as oidc from 'openid-client';
import { Secret, TOTP } from 'otpauth';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { createPerson } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

/**
 * Issue 26's "Continue with …" in a real browser: the hosted pages in Chromium, the service on
 * loopback and a real oidc-provider as the upstream, on its own loopback issuer (no preset; http is
 * allowed outside production). The person signs up and in through the buttons, meets the second
 * step after the provider when an authenticator is enrolled, cancels at the provider, is told an
 * account already uses the address, and links a second provider from Security (Connected
 * accounts). No handoff code stays in the address bar or in the session history, and no token ever
 * appears in a URL. Every new page state is checked by axe-core.
 */
const CLIENT_ID = 'identity-e2e';
const CLIENT_SECRET = `upstream-${'c'.repeat(40)}`;
const EMAIL = 'lin@example.com';

let t: TestApp;
/** An application signing people in through the service's OpenID Provider (its callback only). */
let app: Server;
let appOrigin: string;
let acme: Upstream;
let beta: Upstream;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let origin: string;
let totpSecret = '';
const urls: string[] = [];
const pageErrors: string[] = [];
const axeChecked: string[] = [];

/** The service's clock starts at the real time (the upstream's ID tokens are judged by it). */
const clock = new ManualClock(new Date());

function totp(): string {
  const code = new TOTP({ secret: Secret.fromBase32(totpSecret) }).generate({
    timestamp: clock.now().getTime(),
  });
  // A code is accepted once per time step: the next one is computed a period later.
  clock.advance(30);
  return code;
}

async function axe(p: Page, name: string): Promise<void> {
  axeChecked.push(await axeCheck(p, name));
}

async function heading(p: Page, text: string | RegExp): Promise<void> {
  await p.getByRole('heading', { level: 1, name: text }).waitFor();
}

/** The session history's URLs (the debugging protocol), to prove no code stayed in it. */
async function historyUrls(p: Page): Promise<string[]> {
  const cdp = await p.context().newCDPSession(p);
  try {
    const { entries } = await cdp.send('Page.getNavigationHistory');
    return entries.map((e) => e.url);
  } finally {
    await cdp.detach();
  }
}

/** Lands on the hosted page after a provider flow: the address bar and history hold no code. */
async function expectCleanReturn(p: Page): Promise<void> {
  expect(p.url()).not.toMatch(/[?&](handoff|provider|error|result)=/);
  const history = await historyUrls(p);
  // The hosted page before the provider, the provider's pages, the hosted page after.
  expect(history.filter((url) => url.startsWith(`${origin}/account/`)).length).toBeGreaterThan(1);
  // (The application's own callback, from the authorize test, legitimately carries its code.)
  for (const url of history.filter((u) => !u.startsWith(`${appOrigin}/callback`))) {
    expect(url).not.toMatch(/handoff=|[?&]code=/);
  }
}

const nav = (p: Page, name: string) => p.getByRole('navigation').getByRole('link', { name });

/** How many messages the development outbox holds for the address (step-up codes by mail). */
const mailCount = () => messagesTo(t.config.dataDir, EMAIL).length;

/**
 * Answers an inline step-up in `section`: with the code sent to the address (the `before + 1`-th
 * message; `before` counted before the click), or with the authenticator.
 */
async function stepUp(section: Locator, by: { mailBefore: number } | 'authenticator'): Promise<void> {
  const box = section.locator('.stepup');
  await box.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
  if (by !== 'authenticator') {
    await box.getByText('We sent a code').waitFor();
    await box.getByLabel('Code').fill(await waitForCode(t.config.dataDir, EMAIL, by.mailBefore + 1));
  } else {
    await box.getByText('authenticator app').waitFor();
    await box.getByLabel('Code').fill(totp());
  }
  await box.getByRole('button', { name: 'Confirm' }).click();
}

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  app = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Back at the application</h1>');
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  appOrigin = `http://127.0.0.1:${(app.address() as { port: number }).port}`;
  const redirect = (name: string) => `${origin}/api/v1/providers/${name}/callback`;
  acme = await startUpstream({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: [redirect('acme')],
  });
  beta = await startUpstream({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: [redirect('beta')],
  });
  acme.setAccount({ sub: 'acme-lin', email: EMAIL, email_verified: true, name: 'Lin' });
  beta.setAccount({ sub: 'beta-lin', email: 'lin@beta.example', email_verified: true, name: 'Lin' });
  t = await createTestApp({
    clock,
    env: {
      ACCOUNT_UI: 'on',
      PUBLIC_ORIGIN: origin,
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: 'dashboard',
          client_secret: `dash-${'d'.repeat(40)}`,
          client_name: 'Dashboard',
          redirect_uris: [`${appOrigin}/callback`],
          grant_types: ['authorization_code'],
          first_party: true,
        },
      ]),
      IDENTITY_PROVIDERS: JSON.stringify([
        {
          name: 'acme',
          displayName: 'Acme',
          issuer: acme.issuer,
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
        },
        {
          name: 'beta',
          displayName: 'Beta',
          issuer: beta.issuer,
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
        },
      ]),
    },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('framenavigated', (f) => urls.push(f.url()));
  page.on('request', (r) => urls.push(r.url()));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await acme?.close();
  await new Promise<void>((r) => (app ? app.close(() => r()) : r()));
  await beta?.close();
});

describe('"Continue with …" on the hosted pages in Chromium', () => {
  it('offers a button per provider, with its name and a neutral mark', async () => {
    await page.goto(`${origin}/account/#/sign-up`);
    await heading(page, 'Create an account');
    const buttons = page.locator('#providers button');
    await expect
      .poll(() => buttons.allTextContents())
      .toEqual(['AContinue with Acme', 'BContinue with Beta']);
    // The mark is decoration: the button's name is the sentence alone.
    await page.getByRole('button', { name: 'Continue with Acme', exact: true }).waitFor();
    await axe(page, 'sign-up with providers');
  });

  it('(a) signs up through "Continue with Acme" and lands signed in', async () => {
    await page.getByRole('button', { name: 'Continue with Acme' }).click();
    await acme.signInIfAsked(page);
    await heading(page, 'Your account');
    await expectCleanReturn(page);
    // The provider asserted the address verified: it became the identity's verified address.
    await expect.poll(() => page.locator('.identifier').first().textContent()).toBe('lin@example.com');
    expect(await page.locator('#methods').textContent()).toContain('Linked provider');
  });

  it('(b) signs out, then signs in again through the button', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
    await page.locator('#providers button').first().waitFor();
    await axe(page, 'sign-in with providers');
    await page.getByRole('button', { name: 'Continue with Acme' }).click();
    await acme.signInIfAsked(page);
    await heading(page, 'Your account');
    await expectCleanReturn(page);
  });

  it('(e) Security lists the connected account; the last way in cannot be disconnected', async () => {
    await nav(page, 'Security').click();
    await heading(page, 'Security');
    // A provider's link is listed under linked accounts, not among the addresses.
    await page.locator('#row-addresses').click();
    await heading(page, 'Email addresses and phone numbers');
    expect(await page.locator('#method-list').textContent()).not.toContain('acme');
    await page.getByRole('link', { name: 'Back to Security' }).click();
    await heading(page, 'Security');
    await page.locator('#row-linked').click();
    await heading(page, 'Linked accounts');
    const section = page.locator('#connected');
    await expect.poll(() => section.locator('#connected-list').textContent()).toContain('Acme');
    await axe(page, 'connected accounts');
    const before = mailCount();
    await section.getByRole('button', { name: 'Disconnect Acme' }).click();
    await section.getByRole('button', { name: 'Disconnect', exact: true }).click();
    await stepUp(section, { mailBefore: before });
    await section
      .getByRole('alert')
      .filter({ hasText: 'Acme is your last way in, so it cannot be disconnected.' })
      .waitFor();
    await axe(page, 'connected accounts: last way in');
  });

  it('(e) connects Beta from Security (a link flow after a step-up), then disconnects it', async () => {
    const section = page.locator('#connected');
    await section.getByRole('button', { name: 'Connect Beta' }).click();
    // The elevation of the refused disconnection is still alive: no second prompt.
    await beta.signInIfAsked(page);
    await heading(page, 'Linked accounts');
    await expectCleanReturn(page);
    await section.getByText('Beta is now connected.').waitFor();
    await expect.poll(() => section.locator('#connected-list li').count()).toBe(2);
    await axe(page, 'connected accounts: linked');
    const before = mailCount();
    await section.getByRole('button', { name: 'Disconnect Beta' }).click();
    await section.getByRole('button', { name: 'Disconnect', exact: true }).click();
    // The page was loaded again by the flow: the elevation, in memory, went with it.
    await stepUp(section, { mailBefore: before });
    await section.getByText('Beta is no longer connected.').waitFor();
    await expect.poll(() => section.locator('#connected-list li').count()).toBe(1);
  });

  it('(c) with an authenticator enrolled, the provider sign-in asks for the second step', async () => {
    await page.getByRole('link', { name: 'Back to Security' }).click();
    await heading(page, 'Security');
    await page.locator('#row-two-step').click();
    await heading(page, '2-step verification');
    const section = page.locator('#authenticator');
    await section.getByRole('button', { name: 'Set up an authenticator app' }).click();
    // The elevation of the disconnection above is still alive.
    await section.getByRole('heading', { name: 'Scan this code with your app' }).waitFor();
    totpSecret = ((await page.locator('#totp-secret').textContent()) ?? '').trim();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByLabel('Code from the app').fill(totp());
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByText('Authenticator app added.').waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
    await page.getByRole('button', { name: 'Continue with Acme' }).click();
    await acme.signInIfAsked(page);
    await heading(page, '2-step verification');
    await expectCleanReturn(page);
    await page
      .getByText('You signed in with Acme. Now confirm it is you with your authenticator app.')
      .waitFor();
    await axe(page, 'second step after a provider');
    await page.getByLabel('Authenticator code').fill(totp());
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading(page, 'Your account');
  });

  it('(d) cancelling at the provider shows the sentence on the sign-in page', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
    acme.denyNext();
    await page.getByRole('button', { name: 'Continue with Acme' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'You cancelled signing in with Acme.' });
    await alert.waitFor();
    await heading(page, 'Sign in');
    await expectCleanReturn(page);
    await axe(page, 'sign-in: cancelled at the provider');
  });

  it('an upstream account whose verified address an account here holds is not linked: the person is told', async () => {
    const other = await createPerson(t.ctx, 'kim@example.com');
    beta.setAccount({ sub: 'beta-kim', email: other.email, email_verified: true, name: 'Kim' });
    await page.goto(`${origin}/account/#/sign-up`);
    await heading(page, 'Create an account');
    await page.getByRole('button', { name: 'Continue with Beta' }).click();
    await beta.signInIfAsked(page);
    await page
      .getByRole('alert')
      .filter({
        hasText:
          'An account already uses this email address. Sign in to it, then connect Beta from Security.',
      })
      .waitFor();
    await heading(page, 'Create an account');
    await expectCleanReturn(page);
    await axe(page, 'sign-up: account exists');
  });

  it("(f) an application's sign-in (#/authorize/<uid>) continues with Acme and goes back to the application", async () => {
    const discovery = (await (await fetch(`${origin}/.well-known/openid-configuration`)).json()) as {
      authorization_endpoint: string;
    };
    const authorize = new URL(discovery.authorization_endpoint);
    authorize.search = new URLSearchParams({
      client_id: 'dashboard',
      response_type: 'code',
      scope: 'openid email',
      redirect_uri: `${appOrigin}/callback`,
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    }).toString();
    await page.goto(authorize.href);
    await page.waitForURL(/\/account\/#\/authorize\/[A-Za-z0-9_-]+$/);
    const at = page.url();
    await heading(page, 'Sign in to continue to Dashboard');
    await axe(page, 'application sign-in with providers');
    await page.getByRole('button', { name: 'Continue with Acme' }).click();
    await acme.signInIfAsked(page);
    // Back on the interaction's page, then its second step (the authenticator), then the application.
    await heading(page, '2-step verification');
    await expectCleanReturn(page);
    expect(await historyUrls(page)).toContain(at);
    await page.getByLabel('Authenticator code').fill(totp());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${appOrigin}/callback?**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
  });

  it('an account whose only way in is a provider confirms it is you with it, then connects another', async () => {
    await page.goto(`${origin}/account/#/`);
    await heading(page, 'Your account');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
    // Beta does not vouch for the address: the new account has no address, no password.
    beta.setAccount({ sub: 'beta-solo', email: 'solo@beta.example', email_verified: false, name: 'Solo' });
    await page.getByRole('button', { name: 'Continue with Beta' }).click();
    await beta.signInIfAsked(page);
    await heading(page, 'Your account');
    await nav(page, 'Security').click();
    await heading(page, 'Security');
    await page.locator('#row-linked').click();
    await heading(page, 'Linked accounts');
    const section = page.locator('#connected');
    await section.getByRole('button', { name: 'Connect Acme' }).click();
    // No code can be sent and there is no authenticator: the step-up offers the linked provider.
    await section.locator('.stepup').getByRole('button', { name: 'Use Beta' }).click();
    await beta.signInIfAsked(page);
    await heading(page, 'Linked accounts');
    await expectCleanReturn(page);
    await section.getByText('You confirmed it is you with Beta. You can go on.').waitFor();
    await axe(page, 'connected accounts: confirmed with a provider');
    acme.setAccount({ sub: 'acme-solo', email: 'solo@acme.example', email_verified: false });
    // The elevation from Beta is held: no second prompt.
    await section.getByRole('button', { name: 'Connect Acme' }).click();
    await acme.signInIfAsked(page);
    await heading(page, 'Linked accounts');
    await section.getByText('Acme is now connected.').waitFor();
    await expect.poll(() => section.locator('#connected-list li').count()).toBe(2);
  });

  it('sent no token or code to a URL it kept, and reported no page error', async () => {
    expect(pageErrors).toEqual([]);
    // The codes did come back in the address (the callback's redirect), and left it at once.
    expect(urls.some((url) => /\/account\/#\/sign-up\?provider=acme&handoff=/.test(url))).toBe(true);
    for (const url of urls) {
      // The service's own pages never carry a token; the handoff code only passes through the
      // callback's redirect, and is gone from the address bar before any request is made.
      if (!url.startsWith(origin)) continue;
      expect(url).not.toMatch(/token/i);
    }
    console.info(axeChecked.join('\n'));
    await context.close();
  });
});
