import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { addAuthenticator } from '../helpers/elevation.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { bodyOf, mailCode, mailCount, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

/*
 * Issue 45's sign-in links on the hosted pages in Chromium (SIGN_IN_CODES=email, SIGN_IN_LINKS on,
 * a real SMTP server): the link's page takes its token out of the address bar, shows "Continue as
 * <masked address>" and signs nobody in until the press; in the browser that asked, the code step
 * of an application's sign-in learns that the sign-in completed and goes back to the application;
 * in a second browser the page warns first, and the asking tab says the sign-in finished
 * elsewhere and offers a new code; a spent link says so. axe on each new state.
 */
const CLIENT = { id: 'dashboard', secret: `d-${'q'.repeat(40)}`, name: 'Dashboard' };
const LINK = /(https?:\/\/\S+#\/sign-in\/link\/[0-9a-f-]{36}\/[A-Za-z0-9_-]{43})(?:\s|$)/;

let t: TestApp;
let smtp: SmtpSink;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let origin: string;
let callback: Server;
let redirectUri: string;
const pageErrors: string[] = [];
const clock = new ManualClock(new Date());

const heading = (p: Page, text: string) => p.getByRole('heading', { level: 1, name: text }).waitFor();
const step = (p: Page, text: string) => p.getByRole('heading', { level: 2, name: text }).waitFor();
const masked = (email: string) => `${email[0]}***@${email.split('@')[1]}`;

/** The link in the `count`-th message to `to`. */
async function mailLink(to: string, count: number): Promise<string> {
  await mailCode(smtp, to, count);
  const mine = smtp.received.filter((m) => m.to.includes(to));
  const text = bodyOf(mine[count - 1].raw).replace(/=\r\n/g, '');
  const m = LINK.exec(text);
  if (!m) throw new Error(`no link in: ${text}`);
  return m[1];
}

/** Asks for a code on the sign-in card (already open) and waits for its step; answers the message's number. */
async function askForCode(p: Page, who: Person): Promise<number> {
  const count = mailCount(smtp, who.email) + 1;
  await p.locator('input[name="identifier"]').fill(who.email);
  await p.getByRole('button', { name: 'Email me a code' }).click();
  await step(p, 'Check your email');
  await mailCode(smtp, who.email, count);
  return count;
}

function authorizeUrl(): string {
  const verifier = randomBytes(32).toString('base64url');
  return `${origin}/oidc/auth?${new URLSearchParams({
    client_id: CLIENT.id,
    response_type: 'code',
    scope: 'openid email',
    redirect_uri: redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
    nonce: randomBytes(8).toString('hex'),
  })}`;
}

beforeAll(async () => {
  smtp = await startSmtpSink();
  callback = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Back at the application</h1>');
  });
  await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock,
    env: {
      PUBLIC_ORIGIN: origin,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      ACCOUNT_UI: 'on',
      SIGN_IN_CODES: 'email',
      SIGN_IN_LINKS: 'on',
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: CLIENT.id,
          client_secret: CLIENT.secret,
          client_name: CLIENT.name,
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code'],
          first_party: true,
        },
      ]),
    },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale: 'en-US' });
  // The pages' timers are Playwright's: the code step's next look at its status comes on demand.
  await context.clock.install();
  page = await context.newPage();
  page.setDefaultTimeout(8000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
  await new Promise<void>((r) => (callback ? callback.close(() => r()) : r()));
});

describe('sign-in links on the hosted pages (issue 45)', () => {
  it('the code step says the message carries a link', async () => {
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    await askForCode(page, await createPerson(t.ctx));
    await page.getByText('Or open the link in the message, in this browser.').waitFor();
  });

  it('same browser: the link asks first, then signs in; the asking tab goes back to the application', async () => {
    const who = await createPerson(t.ctx);
    await page.goto(authorizeUrl());
    await page.waitForURL(/\/account\/#\/authorize\//);
    await heading(page, `Sign in to continue to ${CLIENT.name}`);
    const count = await askForCode(page, who);
    const link = await mailLink(who.email, count);

    // The message's link, opened in another tab of the same browser.
    const tab = await context.newPage();
    tab.setDefaultTimeout(8000);
    tab.on('pageerror', (e) => pageErrors.push(String(e)));
    await tab.goto(link);
    await heading(tab, 'Sign in');
    const button = tab.getByRole('button', { name: `Continue as ${masked(who.email)}` });
    await button.waitFor();
    // The token left the address bar at once; nothing warns (this browser asked); nobody is signed in.
    expect(tab.url()).toBe(`${origin}/account/#/sign-in/link`);
    expect(await tab.locator('.link-elsewhere').count()).toBe(0);
    await axeCheck(tab, 'link page, same browser');
    await page.clock.runFor(8000);
    expect(page.url()).toContain('#/authorize/');

    await button.click();
    await heading(tab, 'Your account');
    // The asking tab learns it at its next look and goes on to the application.
    await page.clock.runFor(8000);
    await page.waitForURL(`${redirectUri}?**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await tab.getByRole('button', { name: 'Sign out' }).click();
    await heading(tab, 'Sign in');
    await tab.close();
  });

  it('another browser: a warning first, then the sign-in there; the asking tab offers a new code', async () => {
    const who = await createPerson(t.ctx);
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    const count = await askForCode(page, who);
    const link = await mailLink(who.email, count);

    const other = await browser.newContext({ locale: 'en-US' });
    try {
      const there = await other.newPage();
      there.setDefaultTimeout(8000);
      there.on('pageerror', (e) => pageErrors.push(String(e)));
      await there.goto(link);
      await there
        .getByText(
          'This is not the browser that asked for this link. Continue only if you asked for it yourself, just now.',
        )
        .waitFor();
      await axeCheck(there, 'link page, another browser');
      await there.getByRole('button', { name: `Continue as ${masked(who.email)}` }).click();
      await heading(there, 'Your account');

      // The asking tab: finished elsewhere, not signed in here; a new code signs in here.
      await page.clock.runFor(8000);
      await page
        .getByText(
          'You finished signing in in another browser, with the link. This browser is not signed in: send a new code to sign in here.',
        )
        .waitFor();
      await axeCheck(page, 'code step, finished in another browser');
      await page.clock.runFor(31_000);
      const resend = page.getByRole('button', { name: 'Send a new code' });
      await expect.poll(() => resend.isEnabled()).toBe(true);
      await resend.click();
      const code = await mailCode(smtp, who.email, count + 1);
      await page.getByLabel('Code', { exact: true }).fill(code);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await heading(page, 'Your account');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await heading(page, 'Sign in');

      // The link is spent: opened again, it says so and leads to the sign-in.
      await there.goto('about:blank');
      await there.goto(link);
      await there.getByText('This link has expired or was already used.').waitFor();
      await axeCheck(there, 'link page, spent link');
      await there.getByRole('link', { name: 'Go to sign in' }).click();
      await heading(there, 'Your account');
    } finally {
      await other.close();
    }
  });

  it('an identity with an authenticator goes on from the link to the same second step', async () => {
    const who = await createPerson(t.ctx);
    const sent = mailCount(smtp, who.email);
    const totp = await addAuthenticator(t, who, () => mailCode(smtp, who.email, sent + 1));
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    const link = await mailLink(who.email, await askForCode(page, who));
    const tab = await context.newPage();
    tab.setDefaultTimeout(8000);
    tab.on('pageerror', (e) => pageErrors.push(String(e)));
    await tab.goto(link);
    await tab.getByRole('button', { name: `Continue as ${masked(who.email)}` }).click();
    await heading(tab, '2-step verification');
    await tab.getByText('Your link is right. Now confirm it is you with your authenticator app.').waitFor();
    await axeCheck(tab, 'second step after a link');
    // A TOTP code is accepted once per period: the service's clock moves one period on.
    clock.advance(30);
    await tab.getByLabel('Authenticator code').fill(totp.generate({ timestamp: clock.now().getTime() }));
    await tab.getByRole('button', { name: 'Continue' }).click();
    await heading(tab, 'Your account');
    await tab.getByRole('button', { name: 'Sign out' }).click();
    await heading(tab, 'Sign in');
    await tab.close();
  });

  it('speaks French', async () => {
    const who = await createPerson(t.ctx);
    const count = mailCount(smtp, who.email) + 1;
    // Asked from elsewhere (no browser's cookie): the French browser is not the one that asked.
    const sent = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/codes',
      payload: { identifierType: 'email', identifier: who.email },
    });
    expect(sent.statusCode, sent.body).toBe(201);
    const link = await mailLink(who.email, count);
    const fr = await browser.newContext({ locale: 'fr-FR' });
    try {
      const p = await fr.newPage();
      p.setDefaultTimeout(8000);
      p.on('pageerror', (e) => pageErrors.push(String(e)));
      await p.goto(link);
      await heading(p, 'Connexion');
      await p.getByRole('button', { name: `Continuer en tant que ${masked(who.email)}` }).waitFor();
      await p
        .getByText(
          'Ce n’est pas le navigateur qui a demandé ce lien. Ne continuez que si vous l’avez demandé vous-même, à l’instant.',
        )
        .waitFor();
      await axeCheck(p, 'link page in French, another browser');
      // A link that names nothing: the same words as a spent one.
      await p.goto('about:blank');
      await p.goto(link.replace(/\/[A-Za-z0-9_-]{43}$/, `/${'A'.repeat(43)}`));
      await p.getByText('Ce lien a expiré ou a déjà été utilisé.').waitFor();
      await p.getByRole('link', { name: 'Aller à la connexion' }).waitFor();
      await axeCheck(p, 'link page in French, refused');
    } finally {
      await fr.close();
    }
  });

  it('raised no error in the page', () => {
    expect(pageErrors).toEqual([]);
  });
});
