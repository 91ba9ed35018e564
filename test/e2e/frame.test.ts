import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';

/**
 * The hosted pages' frame in Chromium (issue 27, "feedback everywhere" and the mobile menu): the
 * navigation folds behind a Menu button on a phone-sized screen; a page that waits for the service
 * shows a loading bar and marks <main> busy; a browser whose session was ended in another tab or
 * elsewhere (another device's "sign out everywhere") says so on the sign-in page it lands on; the
 * frame speaks French to a French browser.
 */
let t: TestApp;
let browser: Browser;
let origin: string;
let person: Person;

async function signedInPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  await page.goto(`${origin}/account/#/sign-in`);
  await page.getByLabel('Email or phone number').fill(person.email);
  await page.getByLabel('Password', { exact: true }).fill(person.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
  return page;
}

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({ env: { PUBLIC_ORIGIN: origin, ACCOUNT_UI: 'on' } });
  await t.app.listen({ host: '127.0.0.1', port });
  person = await createPerson(t.ctx);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the hosted pages’ frame in Chromium', () => {
  it('folds the navigation behind a Menu button on a phone-sized screen', async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 812 }, locale: 'en-US' });
    const page = await signedInPage(context);
    const menu = page.getByRole('button', { name: 'Menu' });
    const security = page.getByRole('navigation').getByRole('link', { name: 'Security', exact: true });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await security.isVisible()).toBe(false);
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await security.waitFor({ state: 'visible' });
    await axeCheck(page, 'mobile menu open');
    // Escape closes it and gives focus back to the button.
    await security.focus();
    await page.keyboard.press('Escape');
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Menu');
    // Following a link closes it too (the navigation is drawn again for the new page).
    await menu.click();
    await security.click();
    await page.getByRole('heading', { level: 1, name: 'Security' }).waitFor();
    expect(await page.getByRole('button', { name: 'Menu' }).getAttribute('aria-expanded')).toBe('false');
    // On a wide screen there is no menu button: the links show.
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false);
    expect(await page.locator('nav').getByRole('link', { name: 'Devices' }).isVisible()).toBe(true);
    await context.close();
  });

  it('shows a loading bar and marks the page busy while a page waits for the service', async () => {
    const context = await browser.newContext({ locale: 'en-US' });
    const page = await signedInPage(context);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/api/v1/sessions?*', async (route) => {
      await held;
      await route.continue();
    });
    await page.locator('nav').getByRole('link', { name: 'Devices' }).click();
    await page.locator('.page-loading').waitFor({ state: 'visible' });
    expect(await page.locator('main').getAttribute('aria-busy')).toBe('true');
    release();
    await page.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();
    await page.locator('.page-loading').waitFor({ state: 'hidden' });
    expect(await page.locator('main').getAttribute('aria-busy')).toBeNull();
    await context.close();
  });

  it('tells a tab that it was signed out in another tab', async () => {
    const context = await browser.newContext({ locale: 'en-US' });
    const first = await signedInPage(context);
    const second = await context.newPage();
    await second.goto(`${origin}/account/#/`);
    await second.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await second.getByRole('button', { name: 'Sign out' }).click();
    await second.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    // The tab that signed out says nothing; the other one says why it shows the sign-in page.
    expect(await second.getByRole('status').filter({ hasText: 'signed out' }).count()).toBe(0);
    await first.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await first.getByText('You were signed out in another tab.').waitFor();
    await axeCheck(first, 'signed out in another tab');
    await context.close();
  });

  it('tells a browser whose session another device ended', async () => {
    const context = await browser.newContext({ locale: 'en-US' });
    const page = await signedInPage(context);
    // Another device signs out everywhere: this browser's session ends at the service.
    const other = await signIn(t.app, person);
    const everywhere = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/everywhere',
      headers: bearer(other.accessToken),
    });
    expect(everywhere.statusCode).toBe(204);
    await page.locator('nav').getByRole('link', { name: 'Devices' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await page.getByText(/You were signed out: your session was ended from another device/).waitFor();
    await context.close();
  });

  it('fits 320 px: no page scrolls sideways', async () => {
    const context = await browser.newContext({ viewport: { width: 320, height: 640 }, locale: 'fr-FR' });
    const page = await context.newPage();
    page.setDefaultTimeout(8000);
    const wide: string[] = [];
    const check = async (route: string) => {
      await page.goto('about:blank');
      await page.goto(`${origin}/account/${route}`);
      await page.locator('main h1').waitFor();
      await page.locator('.page-loading').waitFor({ state: 'hidden' });
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      if (width > 320) wide.push(`${route}: ${width}px`);
    };
    // French: its words are longer than English ones.
    for (const route of ['#/sign-in', '#/sign-up', '#/recover']) await check(route);
    await page.goto(`${origin}/account/#/sign-in`);
    await page.getByLabel('Adresse e-mail ou numéro de téléphone').fill(person.email);
    await page.getByLabel('Mot de passe', { exact: true }).fill(person.password);
    await page.getByRole('button', { name: 'Se connecter', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Votre compte' }).waitFor();
    for (const route of [
      '#/',
      '#/security',
      '#/security/password',
      '#/security/two-step',
      '#/security/passkeys',
      '#/security/recovery-codes',
      '#/security/addresses',
      '#/devices',
      '#/history',
      '#/apps',
    ]) {
      await check(route);
    }
    expect(wide).toEqual([]);
    await context.close();
  });

  it('speaks French to a French browser', async () => {
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    await page.goto(`${origin}/account/#/sign-in`);
    await page.locator('main h1').waitFor();
    expect(await page.getAttribute('html', 'lang')).toBe('fr');
    expect(await page.locator('.skip').textContent()).toBe('Aller au contenu');
    expect(await page.title()).toContain('Votre compte');
    await context.close();
  });
});
