import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { type Locale, setLocale } from '../../ui/i18n.js';
import { t as account } from '../../ui/messages/account.js';
import { t as recover } from '../../ui/messages/recover.js';
import { t as security } from '../../ui/messages/security.js';
import { t as signIn } from '../../ui/messages/sign-in.js';
import { t as signUp } from '../../ui/messages/sign-up.js';
import { t as stepUp } from '../../ui/messages/stepup.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';
import { mailCode, mailCount, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

/**
 * Issue 27's journeys in every combination a person meets them: desktop (1280×800) and phone
 * (375×812), light and dark, English and French. In each combination a new person signs up and
 * confirms the address by the mailed code, sets up an authenticator app (step-up by mail, the
 * three guided steps, the recovery codes), signs in again through the second step, and recovers
 * the account after a forgotten password, finishing with a recovery code. axe-core checks every
 * step (no violation of any impact), each page's words are found through the same catalogues the
 * pages read (ui/messages), so the French journey proves the French pages, and the page must not
 * scroll sideways. Two combinations (English, light, desktop; French, dark, phone) save each step
 * to docs/ui/journeys/ for docs/ui/README.md.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS = join(ROOT, 'docs/ui/journeys');

const SCREENS = { desktop: { width: 1280, height: 800 }, phone: { width: 375, height: 812 } } as const;
const THEMES = ['light', 'dark'] as const;
const LANGUAGES: Record<Locale, string> = { en: 'en-GB', fr: 'fr-FR' };
const PHOTOGRAPHED = new Set(['en.light.desktop', 'fr.dark.phone']);

/** The service's clock starts at the real time (the browser judges expiry by it) and moves on by hand. */
const clock = new ManualClock(new Date());

let t: TestApp;
let smtp: SmtpSink;
let browser: Browser;
let origin: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  smtp = await startSmtpSink();
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock,
    env: { PUBLIC_ORIGIN: origin, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, ACCOUNT_UI: 'on' },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
});

/** One combination's browser: a fresh context per journey step that needs a fresh sign-in. */
interface Combination {
  language: Locale;
  theme: (typeof THEMES)[number];
  screen: keyof typeof SCREENS;
}

async function open(c: Combination): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    locale: LANGUAGES[c.language],
    colorScheme: c.theme,
    viewport: SCREENS[c.screen],
  });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(`${c.language}.${c.theme}.${c.screen}: ${e}`));
  return { context, page };
}

/** axe on the settled step, no sideways scrolling, and a screenshot in the photographed combinations. */
async function check(page: Page, c: Combination, step: string): Promise<void> {
  await page.locator('.page-loading').waitFor({ state: 'hidden' });
  await axeCheck(page, `${step} (${c.language}, ${c.theme}, ${c.screen})`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `${step}: scrolls sideways`).toBeLessThanOrEqual(0);
  const key = `${c.language}.${c.theme}.${c.screen}`;
  if (PHOTOGRAPHED.has(key)) await page.screenshot({ path: join(SHOTS, `${step}.${key}.png`) });
}

const h1 = (page: Page, name: string) => page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
const h2 = (page: Page, name: string) => page.getByRole('heading', { level: 2, name, exact: true }).waitFor();
const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

describe('the journeys on every screen, theme and language', () => {
  for (const language of Object.keys(LANGUAGES) as Locale[]) {
    for (const theme of THEMES) {
      for (const screen of Object.keys(SCREENS) as (keyof typeof SCREENS)[]) {
        const c: Combination = { language, theme, screen };
        it(`${language}, ${theme}, ${screen}: sign-up, authenticator setup, second step, recovery`, async () => {
          // The catalogues answer in this combination's language (the pages' own words).
          setLocale({ locale: language, pseudo: false });
          const email = `journey-${language}-${theme}-${screen}@example.com`;
          let password = `lantern-${theme}-orchard-${screen}-41`;
          let secret = '';
          const totp = () => {
            // One code per time step per factor: the service's clock moves one period on for each.
            clock.advance(30);
            return new TOTP({ secret: Secret.fromBase32(secret) }).generate({
              timestamp: clock.now().getTime(),
            });
          };
          const nextMail = async (): Promise<() => Promise<string>> => {
            const before = mailCount(smtp, email);
            return () => mailCode(smtp, email, before + 1);
          };

          // 1. Sign up, confirm the address with the mailed code: signed in on the account's home.
          let { context, page } = await open(c);
          try {
            await page.goto(`${origin}/account/#/sign-up`);
            await h1(page, signUp('title'));
            expect(await page.evaluate(() => document.documentElement.lang)).toBe(language);
            await check(page, c, 'sign-up');
            await page.locator('input[name="identifier"]').fill(email);
            await page.locator('input[name="password"]').fill(password);
            let code = await nextMail();
            await button(page, signUp('create')).click();
            await h2(page, signUp('confirm.email'));
            await check(page, c, 'sign-up-confirm');
            await page.locator('input[name="code"]').fill(await code());
            await button(page, signUp('confirm')).click();
            await h1(page, account('title'));
            await check(page, c, 'home');

            // 2. The authenticator: a step-up by mail, then the three guided steps.
            await page.goto(`${origin}/account/#/security/two-step`);
            await h1(page, security('twoStep.title'));
            await check(page, c, 'two-step');
            code = await nextMail();
            await button(page, security('twoStep.start')).click();
            const box = page.locator('.stepup');
            await box.locator('input[name="code"]').fill(await code());
            await check(page, c, 'step-up');
            await box.getByRole('button', { name: stepUp('confirm'), exact: true }).click();
            const card = page.locator('#authenticator');
            await card.getByText(security('guide.stepOf', { n: 1 }), { exact: true }).waitFor();
            secret = (await card.locator('#totp-secret .key-block').allInnerTexts()).join('');
            expect(secret).toMatch(/^[A-Z2-7]{32}$/);
            await check(page, c, 'setup-1-scan');
            await card.getByRole('button', { name: security('guide.next'), exact: true }).click();
            await card.getByText(security('guide.stepOf', { n: 2 }), { exact: true }).waitFor();
            await card.getByLabel(security('guide.code'), { exact: true }).fill(totp());
            await check(page, c, 'setup-2-code');
            await card.getByRole('button', { name: security('guide.confirm'), exact: true }).click();
            await card.getByText(security('guide.stepOf', { n: 3 }), { exact: true }).waitFor();
            await card.getByRole('heading', { name: security('guide.codesTitle'), exact: true }).waitFor();
            const recoveryCodes = await card.locator('#recovery-codes li').allInnerTexts();
            expect(recoveryCodes).toHaveLength(10);
            await check(page, c, 'setup-3-recovery-codes');
            await card.getByRole('button', { name: security('recovery.saved'), exact: true }).click();
            await card.getByText(security('twoStep.on'), { exact: true }).waitFor();
            await check(page, c, 'two-step-on');
            await context.close();

            // 3. A new browser: the password, then the second step with the authenticator code.
            ({ context, page } = await open(c));
            await page.goto(`${origin}/account/#/sign-in`);
            await h1(page, signIn('title'));
            await check(page, c, 'sign-in');
            await page.locator('input[name="identifier"]').fill(email);
            await page.locator('input[name="password"]').fill(password);
            await button(page, signIn('submit')).click();
            await h1(page, signIn('second.title'));
            // The code field has the focus when the step opens.
            await expect
              .poll(() => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name))
              .toBe('code');
            await check(page, c, 'second-step');
            await page.locator('input[name="code"]').fill(totp());
            await button(page, signIn('second.submit')).click();
            await h1(page, account('title'));
            await context.close();

            // 4. Another browser, the password forgotten: a mailed code and a new password, then the
            //    sign-in finishes with a recovery code and says how many are left.
            ({ context, page } = await open(c));
            await page.goto(`${origin}/account/#/sign-in`);
            await h1(page, signIn('title'));
            await page.getByRole('link', { name: signIn('forgot'), exact: true }).click();
            await h1(page, recover('title'));
            await check(page, c, 'recover');
            await page.locator('input[name="identifier"]').fill(email);
            code = await nextMail();
            await button(page, recover('send')).click();
            await h2(page, recover('code.heading'));
            password = `meadow-${screen}-quartz-${theme}-58`;
            await page.locator('input[name="code"]').fill(await code());
            await page.locator('input[name="newPassword"]').fill(password);
            await check(page, c, 'recover-code');
            await button(page, recover('set')).click();
            await h2(page, recover('done.heading'));
            await check(page, c, 'recover-done');
            await page.getByRole('link', { name: recover('done.signIn'), exact: true }).click();
            await h1(page, signIn('title'));
            await page.locator('input[name="identifier"]').fill(email);
            await page.locator('input[name="password"]').fill(password);
            await button(page, signIn('submit')).click();
            await h1(page, signIn('second.title'));
            await button(page, signIn('second.useRecovery')).click();
            await page.getByLabel(signIn('second.recoveryCode'), { exact: true }).fill(recoveryCodes[0]);
            await check(page, c, 'second-step-recovery-code');
            await button(page, signIn('second.submit')).click();
            await page.locator('#codes-left').waitFor();
            expect(await page.locator('#codes-left').innerText()).toBe(
              `${signIn('second.signedIn')} ${signIn('second.codesLeft', { count: 9 })}`,
            );
            await check(page, c, 'recovery-codes-left');
            await button(page, signIn('second.continue')).click();
            await h1(page, account('title'));
          } finally {
            await context.close();
          }
        });
      }
    }
  }

  it('reported no page error', () => {
    expect(pageErrors).toEqual([]);
  });
});
