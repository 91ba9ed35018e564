import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { addVirtualAuthenticator, axeAllCombinations, axeCheck, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';
import { mailCode, mailCount, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

/*
 * A code's lifetime in the hosted pages, with a short CHALLENGE_TTL (60 seconds): the code step
 * says how long the code lasts from the configured lifetime, and a code refused after it says it
 * expired (not "not accepted"), with the next step, in English and in French, light and dark. The
 * service answers an expired code like a wrong one (docs/api.md); the page knows when it sent the
 * code. The service's clock and the page's are both moved, never waited for. And a passkey
 * sign-in on a device with none for this site says so, with the next step.
 */
const EMAIL = 'ines@example.com';
const PASSWORD = 'juniper-cobalt-lantern-58';
const TTL = 60;

let t: TestApp;
let smtp: SmtpSink;
let browser: Browser;
const contexts: BrowserContext[] = [];
let origin: string;
const pageErrors: string[] = [];
const clock = new ManualClock(new Date());

async function open(locale: string, colorScheme: 'light' | 'dark'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale, colorScheme });
  contexts.push(context);
  await context.clock.install();
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  return page;
}

/** The lifetime passes for the service and for the page. */
async function expire(page: Page): Promise<void> {
  clock.advance(TTL + 1);
  await page.clock.runFor((TTL + 1) * 1000);
}

const alertText = (page: Page) => page.locator('.card [role="alert"]:not([hidden])').textContent();

beforeAll(async () => {
  smtp = await startSmtpSink();
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock,
    env: {
      PUBLIC_ORIGIN: origin,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      ACCOUNT_UI: 'on',
      CHALLENGE_TTL: String(TTL),
      WEBAUTHN_RP_ID: 'localhost',
      WEBAUTHN_RP_NAME: 'Identity e2e',
      WEBAUTHN_ORIGINS: origin,
    },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await t?.close();
  await smtp?.close();
});

describe('an expired code says it expired (CHALLENGE_TTL=60)', () => {
  it('sign-up in English, light: "expires in 1 minute", then "This code has expired" and a new code works', async () => {
    const page = await open('en-US', 'light');
    await page.goto(`${origin}/account/#/sign-up`);
    await page.locator('input[name="identifier"]').fill(EMAIL);
    await page.locator('input[name="password"]').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 2, name: 'Confirm your address' }).waitFor();
    await page.getByText('The 6-digit code in the message we sent. It expires in 1 minute.').waitFor();
    expect(await page.locator('main').innerText()).not.toContain('15 minutes');
    const first = await mailCode(smtp, EMAIL, 1);

    await expire(page);
    const code = page.locator('input[name="code"]');
    await code.fill(first);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await expect
      .poll(() => alertText(page))
      .toBe('This code has expired. Send a new code, then enter it here.');
    const error = page.locator('.field-error:not([hidden])');
    expect(await error.textContent()).toBe('This code has expired.');
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    expect((await code.getAttribute('aria-describedby'))?.split(' ')).toContain(
      await error.getAttribute('id'),
    );
    expect(await page.locator('main').innerText()).not.toMatch(/not accepted/i);
    // Issue 46's proof: the expired state in both themes and at both sizes (a phone's included).
    await axeAllCombinations(page, 'sign-up, expired code');

    // The next step: a new code, accepted, and the expired message gone.
    await page.getByRole('button', { name: 'Send a new code' }).click();
    await expect.poll(() => mailCount(smtp, EMAIL)).toBe(2);
    await expect.poll(() => code.getAttribute('aria-invalid')).toBeNull();
    await code.fill(await mailCode(smtp, EMAIL, 2));
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page
      .getByRole('heading', { level: 2, name: 'Confirm your address' })
      .waitFor({ state: 'detached' });
  });

  it('a wrong code within the lifetime is not called expired', async () => {
    const page = await open('en-US', 'light');
    await page.goto(`${origin}/account/#/recover`);
    await page.locator('input[name="identifier"]').fill(EMAIL);
    await page.getByRole('button', { name: 'Send a code' }).click();
    await page.getByRole('heading', { level: 2, name: 'Enter the code' }).waitFor();
    await page.getByText('It expires in 1 minute.', { exact: false }).waitFor();
    await expect.poll(() => mailCount(smtp, EMAIL)).toBe(3);
    await page.locator('input[name="code"]').fill('000000');
    await page.locator('input[name="newPassword"]').fill('orchid-basalt-thimble-31');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await expect.poll(() => alertText(page)).toMatch(/\S/);
    expect(await alertText(page)).not.toMatch(/expired/);
  });

  it('recovery in French, dark: « Il expire dans 1 minute », puis « Ce code a expiré »', async () => {
    const page = await open('fr-FR', 'dark');
    await page.goto(`${origin}/account/#/recover`);
    await page.locator('input[name="identifier"]').fill(EMAIL);
    const before = mailCount(smtp, EMAIL);
    await page.getByRole('button', { name: 'Envoyer un code' }).click();
    await page.getByRole('heading', { level: 2, name: 'Saisissez le code' }).waitFor();
    await page.getByText('Il expire dans 1\u00a0minute.', { exact: false }).waitFor();
    await expect.poll(() => mailCount(smtp, EMAIL)).toBe(before + 1);
    const sentCode = await mailCode(smtp, EMAIL, before + 1);

    await expire(page);
    // A reload keeps the step and when its code was sent.
    await page.reload();
    await page.getByRole('heading', { level: 2, name: 'Saisissez le code' }).waitFor();
    const code = page.locator('input[name="code"]');
    await code.fill(sentCode);
    await page.locator('input[name="newPassword"]').fill('orchid-basalt-thimble-31');
    await page.getByRole('button', { name: 'Enregistrer le nouveau mot de passe' }).click();
    await expect
      .poll(() => alertText(page))
      .toBe('Ce code a expiré. Envoyez-en un nouveau, puis saisissez-le ici.');
    expect(await page.locator('.field-error:not([hidden])').textContent()).toBe('Ce code a expiré.');
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('main').innerText()).not.toMatch(/expired|not accepted/i);
    await axeAllCombinations(page, 'recovery in French, expired code');
    expect(pageErrors).toEqual([]);
  });
});

describe('no passkey for this site on this device', () => {
  for (const [locale, scheme, button, text] of [
    [
      'en-US',
      'light',
      'Sign in with a passkey',
      'There is no passkey for this site on this device. Sign in another way (your password or a code), then add a passkey in Security.',
    ],
    [
      'fr-FR',
      'dark',
      'Se connecter avec une clé d’accès',
      'Cet appareil n’a pas de clé d’accès pour ce site. Connectez-vous autrement (mot de passe ou code), puis ajoutez une clé d’accès dans Sécurité.',
    ],
  ] as const) {
    it(`${locale}, ${scheme}: says so, with the next step`, async () => {
      const context = await browser.newContext({
        viewport: { width: 1000, height: 800 },
        locale,
        colorScheme: scheme,
      });
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(8000);
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      await page.goto(`${origin}/account/#/sign-in`);
      // An authenticator with no credential: the browser answers NotAllowedError without asking.
      await addVirtualAuthenticator(page);
      await page.getByRole('button', { name: button }).click();
      const alert = page.getByRole('alert').filter({ hasText: text });
      await alert.waitFor();
      expect(await page.locator('main').innerText()).not.toMatch(/closed or timed out|a été fermée/);
      await axeCheck(page, `no passkey here (${locale}, ${scheme})`);
      expect(pageErrors).toEqual([]);
    });
  }
});
