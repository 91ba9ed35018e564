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
import { mailCode, mailCount, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

/*
 * Issue 45's hosted code sign-in in Chromium, the service started with SIGN_IN_CODES=email and a
 * real SMTP server: "Email me a code" beside the password (only for a channel that is on), the
 * code step (where it went, the one-time-code input, the resend with its countdown, the link the
 * message carries, the way back), a wrong code and a code ended by a newer one refused in the
 * page's words, the session in the cookie; the same second step as a password for an identity
 * with an authenticator; the page in French; an application's sign-in (#/authorize/<uid>) going
 * back to the application. axe on each new state.
 */
const CLIENT = { id: 'dashboard', secret: `d-${'q'.repeat(40)}`, name: 'Dashboard' };

let t: TestApp;
let smtp: SmtpSink;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let origin: string;
let callback: Server;
let redirectUri: string;
let person: Person;
const pageErrors: string[] = [];
const clock = new ManualClock(new Date());

const heading = (p: Page, text: string) => p.getByRole('heading', { level: 1, name: text }).waitFor();
const step = (p: Page, text: string) => p.getByRole('heading', { level: 2, name: text }).waitFor();
const status = (p: Page) => p.locator('.card .code-sent');
const alertText = (p: Page) => p.getByRole('alert').filter({ hasText: /\S/ }).first().textContent();
/** A code of the right shape that is not `code`. */
const otherThan = (code: string) => (code === '000000' ? '111111' : '000000');

/** Types the identifier on the sign-in card and asks for a code by email. */
async function askForCode(p: Page, email: string, button = 'Email me a code'): Promise<void> {
  await p.locator('input[name="identifier"]').fill(email);
  await p.getByRole('button', { name: button }).click();
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
  person = await createPerson(t.ctx);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale: 'en-US' });
  // The page's timers and Date are Playwright's: the resend cooldown's end is reached at once.
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

describe('sign-in by code on the hosted pages (issue 45)', () => {
  it('offers "Email me a code" beside the password for an email address only (sms is off)', async () => {
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    const button = page.getByRole('button', { name: 'Email me a code' });
    // There, hidden until an identifier of a channel that is on is typed.
    expect(await page.locator('button.code-way').count()).toBe(1);
    expect(await page.locator('button.code-way').isVisible()).toBe(false);
    await page.locator('input[name="identifier"]').fill('+33612345678');
    expect(await page.getByRole('button', { name: /me a code/ }).isVisible()).toBe(false);
    await page.locator('input[name="identifier"]').fill(person.email);
    await button.waitFor();
    // Under the password's button, the same width.
    const signInBox = await page.getByRole('button', { name: 'Sign in', exact: true }).boundingBox();
    const codeBox = await button.boundingBox();
    if (!signInBox || !codeBox) throw new Error('not shown');
    expect(codeBox.y).toBeGreaterThan(signInBox.y);
    expect(Math.abs(codeBox.width - signInBox.width)).toBeLessThanOrEqual(1);
    await axeCheck(page, 'sign-in card with "Email me a code"');
  });

  it('sends a code and shows the code step: where it went, the countdown, the link, the way back', async () => {
    const before = mailCount(smtp, person.email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await step(page, 'Check your email');
    await expect.poll(() => status(page).textContent()).toBe(`We sent a code to ${person.email}.`);
    await mailCode(smtp, person.email, before + 1);
    expect(await page.getByText('Or open the link in the message, in this browser.').isVisible()).toBe(true);
    const code = page.getByLabel('Code', { exact: true });
    expect(await code.getAttribute('autocomplete')).toBe('one-time-code');
    expect(await code.getAttribute('maxlength')).toBe('6');
    expect(await page.getByRole('button', { name: 'Send a new code' }).isDisabled()).toBe(true);
    expect(await page.getByRole('timer').textContent()).toMatch(/00:(29|30)$/);
    await axeCheck(page, 'code step, just sent');
    // The step survives a reload (this tab's sessionStorage: the address and the id, no code).
    await page.reload();
    await step(page, 'Check your email');
    await expect.poll(() => status(page).textContent()).toBe(`We sent a code to ${person.email}.`);
    const kept = await page.evaluate(() => JSON.stringify(sessionStorage));
    expect(kept).toContain(person.email);
    expect(kept).not.toContain(await mailCode(smtp, person.email, before + 1));
    // The way back puts the first step back as it was, the address kept.
    await page.getByRole('button', { name: 'Use another way' }).click();
    await heading(page, 'Sign in');
    expect(await page.locator('input[name="identifier"]').inputValue()).toBe(person.email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await step(page, 'Check your email');
  });

  it('refuses a wrong code, and a code a newer one ended, in its own words', async () => {
    const sent = mailCount(smtp, person.email);
    const first = await mailCode(smtp, person.email, sent);
    await page.getByLabel('Code', { exact: true }).fill(otherThan(first));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect
      .poll(() => alertText(page))
      .toBe(
        'That code is not right, or it has expired. Check the newest message we sent, or send a new code.',
      );
    await axeCheck(page, 'code step, wrong code');

    // Past the cooldown, a new code: it ends the one before it.
    await page.clock.runFor(31_000);
    const resend = page.getByRole('button', { name: 'Send a new code' });
    await expect.poll(() => resend.isEnabled()).toBe(true);
    await resend.click();
    const second = await mailCode(smtp, person.email, sent + 1);
    await expect.poll(() => resend.isDisabled()).toBe(true);
    await page.getByLabel('Code', { exact: true }).fill(first);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => alertText(page)).toMatch(/^That code is not right/);

    // The newest code signs in: the session is the cookie's (a reload keeps it).
    await page.getByLabel('Code', { exact: true }).fill(second);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await heading(page, 'Your account');
    await page.reload();
    await heading(page, 'Your account');
    expect((await context.cookies(origin)).length).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
  });

  it('an identity with an authenticator goes on to the same second step', async () => {
    const who = await createPerson(t.ctx);
    const sent = mailCount(smtp, who.email);
    const totp = await addAuthenticator(t, who, () => mailCode(smtp, who.email, sent + 1));
    const before = mailCount(smtp, who.email);
    await askForCode(page, who.email);
    await step(page, 'Check your email');
    await page.getByLabel('Code', { exact: true }).fill(await mailCode(smtp, who.email, before + 1));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await heading(page, '2-step verification');
    await page.getByText('Your code is right. Now confirm it is you with your authenticator app.').waitFor();
    await axeCheck(page, 'second step after a code');
    // A TOTP code is accepted once per period: the service's clock moves one period on.
    clock.advance(30);
    await page.getByLabel('Authenticator code').fill(totp.generate({ timestamp: clock.now().getTime() }));
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading(page, 'Your account');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');
  });

  it("an application's sign-in (#/authorize/<uid>) by code goes back to the application", async () => {
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      client_id: CLIENT.id,
      response_type: 'code',
      scope: 'openid email',
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
    });
    await page.goto(`${origin}/oidc/auth?${q}`);
    await page.waitForURL(/\/account\/#\/authorize\//);
    await heading(page, `Sign in to continue to ${CLIENT.name}`);
    const before = mailCount(smtp, person.email);
    await askForCode(page, person.email);
    await step(page, 'Check your email');
    await axeCheck(page, "code step on an application's sign-in");
    await page.getByLabel('Code', { exact: true }).fill(await mailCode(smtp, person.email, before + 1));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(`${redirectUri}?**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
  });

  it('speaks French', async () => {
    const fr = await browser.newContext({ locale: 'fr-FR' });
    try {
      const p = await fr.newPage();
      p.setDefaultTimeout(8000);
      const who = await createPerson(t.ctx);
      await p.goto(`${origin}/account/#/sign-in`);
      await heading(p, 'Connexion');
      const before = mailCount(smtp, who.email);
      await askForCode(p, who.email, 'M’envoyer un code par e-mail');
      await step(p, 'Consultez vos e-mails');
      await expect.poll(() => status(p).textContent()).toBe(`Nous avons envoyé un code à ${who.email}.`);
      await p.getByText('Ou ouvrez le lien du message, dans ce navigateur.').waitFor();
      await axeCheck(p, 'code step in French');
      const code = await mailCode(smtp, who.email, before + 1);
      await p.getByLabel('Code', { exact: true }).fill(otherThan(code));
      await p.getByRole('button', { name: 'Se connecter', exact: true }).click();
      await expect
        .poll(() => alertText(p))
        .toBe(
          'Ce code n’est pas le bon, ou il a expiré. Vérifiez le dernier message que nous avons envoyé, ou demandez un nouveau code.',
        );
      await axeCheck(p, 'code step in French, wrong code');
      await p.getByLabel('Code', { exact: true }).fill(code);
      await p.getByRole('button', { name: 'Se connecter', exact: true }).click();
      await heading(p, 'Votre compte');
    } finally {
      await fr.close();
    }
  });

  it('"Text me a code" for a phone number when sms is on; a send past the limit says how long to wait', async () => {
    // An app of its own with one send per window.
    const port = await freePort();
    const limitedOrigin = `http://localhost:${port}`;
    const limited = await createTestApp({
      clock,
      env: {
        PUBLIC_ORIGIN: limitedOrigin,
        SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
        ACCOUNT_UI: 'on',
        SIGN_IN_CODES: 'email,sms',
        RATE_LIMIT_SENDS_A_MESSAGE: '1/900',
      },
    });
    try {
      await limited.app.listen({ host: '127.0.0.1', port });
      await page.goto(`${limitedOrigin}/account/#/sign-in`);
      await heading(page, 'Sign in');
      // With sms on too, a phone number offers "Text me a code".
      await page.locator('input[name="identifier"]').fill('+33612345678');
      await page.getByRole('button', { name: 'Text me a code' }).waitFor();
      expect(await page.getByRole('button', { name: 'Email me a code' }).count()).toBe(0);
      await askForCode(page, 'limit@example.com');
      await step(page, 'Check your email');
      await page.clock.runFor(31_000);
      const resend = page.getByRole('button', { name: 'Send a new code' });
      await expect.poll(() => resend.isEnabled()).toBe(true);
      await resend.click();
      await expect.poll(() => alertText(page)).toBe('Too many attempts. Try again in about 15 minutes.');
      // The resend is held with a countdown; Sign in is not.
      await expect.poll(() => resend.isDisabled()).toBe(true);
      expect(await page.getByRole('timer').textContent()).toMatch(/1[45]:\d\d$/);
      expect(await page.getByRole('button', { name: 'Sign in', exact: true }).isEnabled()).toBe(true);
      await axeCheck(page, 'code step, resend refused (429)');
      // Back on the first step, the same limit says the same.
      await page.getByRole('button', { name: 'Use another way' }).click();
      await page.getByRole('button', { name: 'Email me a code' }).click();
      await expect.poll(() => alertText(page)).toBe('Too many attempts. Try again in about 15 minutes.');
      await axeCheck(page, 'sign-in card, code send refused (429)');
    } finally {
      await limited.close();
    }
  });

  it('raised no error in the page', () => {
    expect(pageErrors).toEqual([]);
  });
});
