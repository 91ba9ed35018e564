import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { contentSecurityPolicy } from '../../src/features/account-ui/routes.js';
import { contrast, luminance, type Rgb } from '../../src/platform/colour.js';
import { createTestApp, type TestApp, testEnv } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';

/**
 * Issue 27's branding and theming in a real browser: the product's name, logo, help link and
 * accent from BRAND_*, the light and dark themes following prefers-color-scheme, text at 4.5:1 and
 * the focus ring at 3:1 against what is beside it, in both. The logo is served from another
 * loopback origin, so the page's CSP must allow exactly that origin for images. Saves the sign-in
 * page in both themes to docs/ui/.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS = join(ROOT, 'docs/ui');

const NAME = 'Acme Cloud';
const ACCENT = '#0f766e';
const SUPPORT = 'https://help.acme.example/contact';
const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="32" height="32"><rect width="32" height="32" rx="7" fill="#0f766e"/><path d="M9 23 16 8l7 15h-4l-3-7-3 7z" fill="#ffffff"/></svg>';

let t: TestApp;
let logoServer: Server;
let logoUrl: string;
let logoOrigin: string;
let browser: Browser;
let page: Page;
let origin: string;
const violations: string[] = [];
const pageErrors: string[] = [];
let logoRequests = 0;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // The logo, on an origin of its own (another port of 127.0.0.1; the pages are on localhost).
  logoServer = createServer((req, res) => {
    logoRequests++;
    res.writeHead(req.url === '/acme.svg' ? 200 : 404, { 'content-type': 'image/svg+xml' });
    res.end(req.url === '/acme.svg' ? LOGO_SVG : '');
  });
  await new Promise<void>((r) => logoServer.listen(0, '127.0.0.1', r));
  logoOrigin = `http://127.0.0.1:${(logoServer.address() as AddressInfo).port}`;
  logoUrl = `${logoOrigin}/acme.svg`;
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    env: {
      PUBLIC_ORIGIN: origin,
      ACCOUNT_UI: 'on',
      BRAND_NAME: NAME,
      BRAND_LOGO_URL: logoUrl,
      BRAND_ACCENT_COLOR: ACCENT,
      BRAND_SUPPORT_URL: SUPPORT,
    },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await ctx.newPage();
  page.setDefaultTimeout(8000);
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  page.on('console', (m) => {
    if (/Content Security Policy|CSP violation/i.test(m.text())) violations.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await new Promise((r) => logoServer?.close(r));
});

/** `rgb(r, g, b)` or `rgba(r, g, b, a)` as computed by the browser. */
function rgbOf(css: string): Rgb {
  const [r, g, b] = (css.match(/[\d.]+/g) ?? []).map(Number);
  return [r, g, b];
}

interface Look {
  background: string;
  text: string;
  button: { background: string; text: string };
}

/** The page's background and text, and the primary button's, as computed. */
async function look(p: Page): Promise<Look> {
  return p.evaluate(() => {
    const css = (el: Element) => getComputedStyle(el);
    const button = document.querySelector('main form button[type="submit"]') as HTMLElement;
    return {
      background: css(document.documentElement).backgroundColor,
      text: css(document.body).color,
      button: { background: css(button).backgroundColor, text: css(button).color },
    };
  });
}

/**
 * Moves focus by keyboard to the first field of the form and answers the ring's colour and width
 * and the colour beside it (the nearest ancestor with a background of its own).
 */
async function focusRing(p: Page): Promise<{ tag: string; outline: string; width: string; beside: string }> {
  await p.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await p.locator('main input').first().focus();
  await p.keyboard.press('Shift+Tab');
  await p.keyboard.press('Tab');
  return p.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    let around: HTMLElement | null = el.parentElement;
    while (around && getComputedStyle(around).backgroundColor.replace(/\s/g, '').endsWith(',0)')) {
      around = around.parentElement;
    }
    const s = getComputedStyle(el);
    return {
      tag: el.tagName,
      outline: s.outlineColor,
      width: s.outlineWidth,
      beside: getComputedStyle(around ?? document.documentElement).backgroundColor,
    };
  });
}

describe('the brand on the server', () => {
  it('allows images from exactly the logo origin, and serves the theme as a hashed style sheet', async () => {
    const index = await t.app.inject({ url: '/account/' });
    const csp = index.headers['content-security-policy'] as string;
    expect(csp).toBe(contentSecurityPolicy([logoOrigin]));
    expect(csp).toContain(`img-src 'self' ${logoOrigin};`);
    // Nothing wider: no scheme, wildcard or data: for images, and every other directive as before.
    expect(csp).not.toMatch(/img-src[^;]*(\*|data:|https:(?!\/))/);
    expect(csp.replace(` ${logoOrigin}`, '')).toBe(contentSecurityPolicy());
    // The brand is in the page before any script runs.
    expect(index.body).toContain(`<title>${NAME}</title>`);
    expect(index.body).toContain(`<img class="brand-logo" src="${logoUrl}" alt="">`);
    expect(index.body).toContain('<meta name="color-scheme" content="light dark">');

    const theme = /href="(theme\.[\w-]+\.css)"/.exec(index.body)?.[1] as string;
    expect(theme).toBeDefined();
    const css = await t.app.inject({ url: `/account/${theme}` });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(css.body).toContain(`--accent:${ACCENT}`);
    expect(css.body).toMatch(/@media \(prefers-color-scheme:dark\)\{:root\{--accent:#[0-9a-f]{6};/);
    const again = await t.app.inject({
      url: `/account/${theme}`,
      headers: { 'if-none-match': css.headers.etag as string },
    });
    expect(again.statusCode).toBe(304);

    const settings = (await t.app.inject({ url: '/account/settings.json' })).json();
    expect(settings.brand).toEqual({ name: NAME, logoUrl, supportUrl: SUPPORT });
  });

  it('writes the name into the page as text, and keeps the CSP tight for a logo on its own origin', async () => {
    const other = await createTestApp({
      db: t.db,
      env: {
        SECRETS_KEY: t.config.secretsKey.toString('base64'),
        ACCOUNT_UI: 'on',
        PUBLIC_ORIGIN: 'http://127.0.0.1:3000',
        BRAND_NAME: 'Tom & Jerry\'s <b>"Shop"</b> $&',
        BRAND_LOGO_URL: 'http://127.0.0.1:3000/logo.png',
      },
    });
    try {
      const index = await other.app.inject({ url: '/account/' });
      expect(index.body).toContain(
        '<title>Tom &#38; Jerry&#39;s &#60;b&#62;&#34;Shop&#34;&#60;/b&#62; $&#38;</title>',
      );
      expect(index.body).toContain(
        '<span class="brand-name">Tom &#38; Jerry&#39;s &#60;b&#62;&#34;Shop&#34;&#60;/b&#62; $&#38;</span>',
      );
      expect(index.body).not.toContain('<b>');
      expect(index.headers['content-security-policy']).toBe(contentSecurityPolicy());
    } finally {
      await other.close();
    }
    // Unset, the typed configuration still names the product for every other page and message,
    // while the pages say "Your account" in their own language.
    expect(loadConfig(testEnv()).brand).toMatchObject({ name: 'Your account', named: false });
  });
});

describe('the brand and both themes in Chromium', () => {
  it('shows the name, logo, title and help link; light and dark keep AA contrast and a 3:1 focus ring', async () => {
    await page.goto(`${origin}/account/#/sign-in`);
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();

    // The header: the logo (decorative: the name beside it says it) and the name.
    const brand = page.locator('header .brand');
    await expect.poll(() => brand.textContent()).toBe(NAME);
    const logo = brand.locator('img.brand-logo');
    expect(await logo.getAttribute('alt')).toBe('');
    await expect
      .poll(() => logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth))
      .toBe(32);
    expect(logoRequests).toBeGreaterThan(0);
    expect(await page.title()).toBe(`Sign in · ${NAME}`);
    const help = page.getByRole('link', { name: 'Get help' });
    expect(await help.getAttribute('href')).toBe(SUPPORT);
    expect(await page.locator('footer').isVisible()).toBe(true);

    const themes: Record<string, Look> = {};
    const rings: Record<string, number> = {};
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const l = await look(page);
      themes[scheme] = l;
      const bg = rgbOf(l.background);
      const ink = rgbOf(l.text);
      if (scheme === 'light') {
        expect(luminance(bg), `${scheme} background ${l.background}`).toBeGreaterThan(0.8);
        expect(luminance(ink), `${scheme} text ${l.text}`).toBeLessThan(0.1);
        // The configured accent, as given, on the primary button.
        expect(l.button.background).toBe('rgb(15, 118, 110)');
      } else {
        expect(luminance(bg), `${scheme} background ${l.background}`).toBeLessThan(0.05);
        expect(luminance(ink), `${scheme} text ${l.text}`).toBeGreaterThan(0.7);
      }
      expect(contrast(ink, bg), `${scheme} text`).toBeGreaterThanOrEqual(4.5);
      expect(
        contrast(rgbOf(l.button.text), rgbOf(l.button.background)),
        `${scheme} button`,
      ).toBeGreaterThanOrEqual(4.5);

      const ring = await focusRing(page);
      expect(ring.tag).toBe('INPUT');
      expect(ring.width).toBe('3px');
      rings[scheme] = contrast(rgbOf(ring.outline), rgbOf(ring.beside));
      expect(
        rings[scheme],
        `${scheme} focus ring ${ring.outline} beside ${ring.beside}`,
      ).toBeGreaterThanOrEqual(3);

      // The form controls follow the theme too (color-scheme), and axe checks every contrast.
      expect(await page.evaluate(() => getComputedStyle(document.documentElement).colorScheme)).toBe(
        'light dark',
      );
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      await axeCheck(page, `sign-in, ${scheme}`);
      await page.screenshot({ path: join(SHOTS, `theme-${scheme}.png`) });
    }
    // A refusal in the dark theme: the alert's text on its tint, and axe on that state.
    await page.locator('main input').first().fill('nobody@example.com');
    await page.locator('main input[type="password"]').first().fill('not-the-password-42');
    await page.locator('main form button[type="submit"]').first().click();
    const alert = page.locator('main .alert:not(:empty)').first();
    await alert.waitFor();
    const [alertText, alertBg] = await alert.evaluate((el) => {
      const s = getComputedStyle(el);
      return [s.color, s.backgroundColor];
    });
    expect(alertBg, 'the alert has a tint of its own').not.toMatch(/, 0\)$/);
    expect(
      contrast(rgbOf(alertText), rgbOf(alertBg)),
      `alert ${alertText} on ${alertBg}`,
    ).toBeGreaterThanOrEqual(4.5);
    await axeCheck(page, 'sign-in refused, dark');

    // Dark is not light: another background, and a lighter accent derived for it.
    expect(themes.dark.background).not.toBe(themes.light.background);
    expect(luminance(rgbOf(themes.dark.button.background))).toBeGreaterThan(
      luminance(rgbOf(themes.light.button.background)),
    );
    expect(violations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
