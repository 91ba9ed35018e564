import { createServer, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeAllCombinations, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';

/*
 * The OpenID Provider's error page in Chromium (issue 46, item 2): an application sends the person
 * to /oidc/auth with a redirect_uri it did not register. The page speaks the browser's language (or
 * the request's ui_locales), follows the system's theme with the brand's colours, says what
 * happened in a sentence, names the application and leads back to it; axe finds nothing, in French
 * and English, each in light and dark at a desktop's and a phone's size. Set up as
 * test/e2e/oidc.test.ts.
 */

let t: TestApp;
let browser: Browser;
let origin: string;
let app: Server;
let appOrigin: string;

beforeAll(async () => {
  const port = await freePort();
  const appPort = await freePort();
  origin = `http://localhost:${port}`;
  appOrigin = `http://127.0.0.1:${appPort}`;
  // The application's own home page: where "Back to …" leads.
  app = createServer((_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<title>Reports</title><h1>Partner Reports home</h1>');
  });
  await new Promise<void>((r) => app.listen(appPort, '127.0.0.1', r));
  t = await createTestApp({
    clock: new ManualClock(new Date()),
    env: {
      ACCOUNT_UI: 'on',
      PUBLIC_ORIGIN: origin,
      BRAND_NAME: 'Acme',
      BRAND_SUPPORT_URL: 'mailto:help@acme.test',
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: 'partner',
          client_secret: `rp-${'s'.repeat(40)}`,
          client_name: 'Partner Reports',
          client_uri: `${appOrigin}/`,
          redirect_uris: [`${appOrigin}/callback`],
          grant_types: ['authorization_code'],
        },
      ]),
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((r) => (app ? app.close(() => r()) : r()));
  await t?.close();
});

const badRequest = (extra: Record<string, string> = {}) =>
  `${origin}/oidc/auth?${new URLSearchParams({
    client_id: 'partner',
    response_type: 'code',
    scope: 'openid',
    redirect_uri: 'https://evil.example/steal',
    ...extra,
  })}`;

describe("the OpenID Provider's error page in a browser", () => {
  it('in French and dark: a plain sentence, the application, the way back; axe finds nothing', async () => {
    const context = await browser.newContext({ locale: 'fr-FR', colorScheme: 'dark' });
    const page = await context.newPage();
    try {
      const res = await page.goto(badRequest());
      expect(res?.status()).toBe(400);
      expect(await page.locator('html').getAttribute('lang')).toBe('fr');
      expect(await page.locator('h1').textContent()).toBe('Cette connexion ne peut pas continuer');
      const main = page.getByRole('main');
      await expect
        .poll(() => main.textContent())
        .toContain("Cette application vous a envoyé vers une adresse qu'elle n'a pas le droit d'utiliser.");
      expect(await main.textContent()).toContain('Application : Partner Reports');
      expect(await page.title()).toBe('Cette connexion ne peut pas continuer · Acme');
      // The code is only a small reference, smaller than the sentence.
      const ref = page.locator('.ref code');
      expect(await ref.textContent()).toBe('invalid_redirect_uri');
      const size = (sel: string) =>
        page
          .locator(sel)
          .first()
          .evaluate((el) => Number.parseFloat(getComputedStyle(el).fontSize));
      expect(await size('.ref')).toBeLessThan(await size('main > p:not(.app):not(.ref)'));
      // Dark: the page is dark, its text light.
      const colours = await page.evaluate(() => ({
        bg: getComputedStyle(document.documentElement).backgroundColor,
        ink: getComputedStyle(document.body).color,
      }));
      expect(colours.bg).toBe('rgb(15, 18, 22)');
      expect(colours.ink).toBe('rgb(230, 232, 235)');
      expect(await page.getByRole('link', { name: "Obtenir de l'aide" }).getAttribute('href')).toBe(
        'mailto:help@acme.test',
      );
      // Issue 46's proof: the page in both themes and at both sizes (dark on a phone included).
      await axeAllCombinations(page, 'OIDC error page, French');
      // The way back leads to the application.
      await page.getByRole('link', { name: 'Retour à Partner Reports' }).click();
      await page.waitForURL(`${appOrigin}/`);
      expect(await page.locator('h1').textContent()).toBe('Partner Reports home');
    } finally {
      await context.close();
    }
  });

  it("in English and light at a phone's size, unless the application asked for French (ui_locales)", async () => {
    const context = await browser.newContext({
      locale: 'en-GB',
      colorScheme: 'light',
      viewport: { width: 375, height: 720 },
    });
    const page = await context.newPage();
    try {
      await page.goto(badRequest());
      expect(await page.locator('h1').textContent()).toBe('This sign-in cannot continue');
      expect(await page.getByRole('main').textContent()).toContain(
        'This application sent you to an address it is not allowed to use.',
      );
      expect(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe(
        'rgb(246, 247, 249)',
      );
      // Nothing wider than the phone.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      await axeAllCombinations(page, 'OIDC error page, English');
      // Put back as it was: still nothing wider than the phone.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      await page.goto(badRequest({ ui_locales: 'fr' }));
      expect(await page.locator('h1').textContent()).toBe('Cette connexion ne peut pas continuer');
    } finally {
      await context.close();
    }
  });
});
