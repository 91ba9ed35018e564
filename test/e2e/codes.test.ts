import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';
import {
  type SmtpSink,
  mailCode as sinkCode,
  mailCount as sinkCount,
  startSmtpSink,
} from '../helpers/smtp.js';

/**
 * Issue 27's one-time codes in Chromium (ui/otp.ts): the code input follows the configured format
 * and length (autocomplete, inputmode, maxlength), keeps only a pasted code's characters and never
 * submits by itself; after a send the step says "Code sent to …" and holds the resend button back
 * for 30 seconds with a countdown; "Use a different address" goes back to the first step with the
 * address (and password) kept; the same step in French. One app with the default numeric codes
 * and one with 8-character alphanumeric ones; one browser.
 */
const EMAIL = 'otto@example.com';
const PASSWORD = 'juniper-cobalt-lantern-58';

let t: TestApp;
let alnum: TestApp;
let smtp: SmtpSink;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let origin: string;
let alnumOrigin: string;
const pageErrors: string[] = [];

const clock = new ManualClock(new Date());

const mailCode = (to: string, count: number) => sinkCode(smtp, to, count);
const mailCount = (to: string) => sinkCount(smtp, to);

const step = (p: Page, text: string) => p.getByRole('heading', { level: 2, name: text }).waitFor();
const code = (p: Page) => p.locator('input[name="code"]');
const status = (p: Page) => p.locator('.card [role="status"]');

/** Pastes `text` into `input` as a browser does (a paste event carrying the clipboard's text). */
function paste(input: Locator, text: string): Promise<void> {
  return input.evaluate((el, pasted) => {
    const data = new DataTransfer();
    data.setData('text/plain', pasted);
    (el as HTMLInputElement).focus();
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}

/**
 * What <main> shows that is not inside a catalogue's ⟦ ⟧ under the pseudo-locale en-XA: visible
 * text and aria-label, title, placeholder and alt, data (addresses, digits, punctuation) aside.
 */
function outsideCatalogue(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const data = [/^[^\s@]+@[^\s@]+$/, /^[\d\s.:,/-]*$/, /^[\s·—–•…:,.()?-]*$/];
    const wrapped = (text: string) => {
      let rest = text;
      for (let before = ''; before !== rest; ) {
        before = rest;
        rest = rest.replace(/⟦[^⟦⟧]*⟧/g, ' ');
      }
      return rest.split(/\s+/).every((part) => part === '' || data.some((re) => re.test(part)));
    };
    const main = document.querySelector('main') as HTMLElement;
    const shown = (el: Element | null) => !!el && (el as HTMLElement).checkVisibility?.() !== false;
    const found: string[] = [];
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = (n.textContent ?? '').trim();
      if (text && shown(n.parentElement) && n.parentElement?.tagName !== 'OPTION' && !wrapped(text))
        found.push(text);
    }
    for (const el of main.querySelectorAll('[aria-label], [title], [placeholder], [alt]')) {
      for (const name of ['aria-label', 'title', 'placeholder', 'alt']) {
        const value = el.getAttribute(name)?.trim();
        if (value && shown(el) && !wrapped(value)) found.push(`[${name}] ${value}`);
      }
    }
    return found;
  });
}

/** The code input's attributes that tell the browser and the keyboard what it takes. */
const attributes = (input: Locator) =>
  input.evaluate((el) =>
    Object.fromEntries(
      ['type', 'autocomplete', 'inputmode', 'maxlength', 'autocapitalize', 'spellcheck', 'pattern'].map(
        (name) => [name, el.getAttribute(name)],
      ),
    ),
  );

/** The first step of sign-up, filled and sent. */
async function signUp(p: Page, email: string, submit: string): Promise<void> {
  await p.locator('input[name="identifier"]').fill(email);
  await p.locator('input[name="password"]').fill(PASSWORD);
  await p.getByRole('button', { name: submit }).click();
}

beforeAll(async () => {
  smtp = await startSmtpSink();
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock,
    env: { PUBLIC_ORIGIN: origin, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, ACCOUNT_UI: 'on' },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  const alnumPort = await freePort();
  alnumOrigin = `http://localhost:${alnumPort}`;
  alnum = await createTestApp({
    clock,
    env: {
      PUBLIC_ORIGIN: alnumOrigin,
      ACCOUNT_UI: 'on',
      VERIFICATION_CODE_FORMAT: 'alphanumeric',
      VERIFICATION_CODE_LENGTH: '8',
    },
  });
  await alnum.app.listen({ host: '127.0.0.1', port: alnumPort });
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
  await alnum?.close();
  await smtp?.close();
});

describe('one-time codes in Chromium (issue 27)', () => {
  it('the sign-up code input: one-time-code, numeric, 6 long; a pasted code keeps its digits; no submit by itself', async () => {
    await page.goto(`${origin}/account/#/sign-up`);
    await signUp(page, EMAIL, 'Create account');
    await step(page, 'Confirm your address');
    expect(await attributes(code(page))).toEqual({
      type: 'text',
      autocomplete: 'one-time-code',
      inputmode: 'numeric',
      maxlength: '6',
      autocapitalize: 'off',
      spellcheck: 'false',
      pattern: null,
    });
    expect(await page.getByLabel('Code', { exact: true }).count()).toBe(1);
    await page.getByText('The 6-digit code in the message we sent.').waitFor();
    // Sent: said so, and the resend waits its cooldown, with a countdown beside it.
    await expect.poll(() => status(page).textContent()).toBe(`Code sent to ${EMAIL}.`);
    const resend = page.getByRole('button', { name: 'Send a new code' });
    expect(await resend.isDisabled()).toBe(true);
    expect(await page.getByRole('timer').textContent()).toMatch(/00:(29|30)$/);
    await axeCheck(page, 'sign-up code step, just sent');

    // A whole code pasted with a space, or with hyphens and more around it, keeps its 6 digits.
    await paste(code(page), '123 456');
    expect(await code(page).inputValue()).toBe('123456');
    await code(page).fill('');
    await paste(code(page), ' 65-43-21 \n');
    expect(await code(page).inputValue()).toBe('654321');
    // Typed letters and spaces do not stay in a numeric code.
    await code(page).fill('');
    await code(page).pressSequentially('12 a3');
    expect(await code(page).inputValue()).toBe('123');

    // Typing the last digit does not send the form.
    let confirms = 0;
    page.on('request', (r) => {
      if (r.url().includes('/sign-ups/') && r.method() === 'POST') confirms++;
    });
    await code(page).pressSequentially('456');
    expect(await code(page).inputValue()).toBe('123456');
    await page.waitForTimeout(200);
    expect(confirms).toBe(0);
    expect(await page.getByRole('alert').filter({ hasText: /\S/ }).count()).toBe(0);

    // A code too short is named on the field, in the page's words.
    await code(page).fill('123');
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByText('Enter all 6 digits of the code.').waitFor();
    expect(await code(page).getAttribute('aria-invalid')).toBe('true');
    expect(confirms).toBe(0);
    await axeCheck(page, 'sign-up code step, code too short');
  });

  it('resend says "Code sent" again and waits 30 seconds with a countdown', async () => {
    const resend = page.getByRole('button', { name: 'Send a new code' });
    await page.clock.runFor(31_000);
    await expect.poll(() => resend.isEnabled()).toBe(true);
    expect(await page.getByRole('timer').count()).toBe(0);
    await resend.click();
    await expect.poll(() => mailCount(EMAIL)).toBe(2);
    await expect.poll(() => status(page).textContent()).toBe(`Code sent to ${EMAIL}.`);
    expect(await resend.isDisabled()).toBe(true);
    expect(await page.getByRole('timer').textContent()).toMatch(/00:(29|30)$/);
    // The Confirm button is not held.
    expect(await page.getByRole('button', { name: 'Confirm', exact: true }).isEnabled()).toBe(true);
    await axeCheck(page, 'sign-up code step, resent');
  });

  it('"Use a different address" goes back with the address kept, and the pending step forgotten', async () => {
    await page.getByRole('button', { name: 'Use a different address' }).click();
    await step(page, 'Your address and a password');
    expect(await page.locator('input[name="identifier"]').inputValue()).toBe(EMAIL);
    expect(await page.locator('input[name="password"]').inputValue()).toBe(PASSWORD);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('identifier');
    expect(await page.evaluate(() => sessionStorage.getItem('account-ui.sign-up'))).toBeNull();
    expect(await page.getByRole('timer').count()).toBe(0);
    await axeCheck(page, 'sign-up first step, back from the code');

    // Sent again from there; the newest code, pasted with a space, confirms and signs in.
    await page.getByRole('button', { name: 'Create account' }).click();
    await step(page, 'Confirm your address');
    const newest = await mailCode(EMAIL, 3);
    await paste(code(page), `${newest.slice(0, 3)} ${newest.slice(3)}`);
    expect(await code(page).inputValue()).toBe(newest);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    expect(pageErrors).toEqual([]);
  });

  it('the same code step in French', async () => {
    const fr = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale: 'fr-FR' });
    try {
      const p = await fr.newPage();
      p.setDefaultTimeout(8000);
      await p.goto(`${origin}/account/#/sign-up`);
      await p.getByRole('heading', { level: 1, name: 'Créer un compte' }).waitFor();
      await signUp(p, 'odile@example.com', 'Créer le compte');
      await step(p, 'Confirmez votre adresse');
      await expect.poll(() => status(p).textContent()).toBe('Code envoyé à odile@example.com.');
      await p
        .getByText(
          'Le code à 6 chiffres du message que nous vous avons envoyé. Il expire dans 15\u00a0minutes.',
        )
        .waitFor();
      expect(await p.getByRole('button', { name: 'Envoyer un nouveau code' }).isDisabled()).toBe(true);
      await p.getByRole('button', { name: 'Confirmer', exact: true }).waitFor();
      await p.getByRole('button', { name: 'Utiliser une autre adresse' }).waitFor();
      await code(p).fill('12');
      await p.getByRole('button', { name: 'Confirmer', exact: true }).click();
      await p.getByText('Saisissez les 6 chiffres du code.').waitFor();
      await axeCheck(p, 'sign-up code step in French');
    } finally {
      await fr.close();
    }
  });

  it('under the pseudo-locale en-XA, the code steps show nothing outside the catalogues', async () => {
    const xa = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale: 'en-XA' });
    try {
      const p = await xa.newPage();
      p.setDefaultTimeout(8000);
      await p.goto(`${origin}/account/#/sign-up`);
      await p.locator('input[name="identifier"]').fill('xavier@example.com');
      await p.locator('input[name="password"]').fill(PASSWORD);
      await p.locator('form button[type="submit"]').click();
      await expect.poll(() => status(p).textContent()).toBe('⟦Code sent to xavier@example.com.⟧');
      await code(p).fill('1');
      await p.locator('form button[type="submit"]').click();
      await p.locator('input[name="code"][aria-invalid="true"]').waitFor();
      expect(await outsideCatalogue(p)).toEqual([]);
      await p.goto(`${origin}/account/#/recover`);
      await p.locator('input[name="identifier"]').fill('xavier@example.com');
      await p.locator('form button[type="submit"]').click();
      await expect.poll(() => status(p).textContent()).toMatch(/^⟦If xavier@example\.com/);
      expect(await outsideCatalogue(p)).toEqual([]);
    } finally {
      await xa.close();
    }
  });

  it('an 8-character alphanumeric code: inputmode text, maxlength 8, letters upper-cased on paste', async () => {
    const p = await context.newPage();
    try {
      await p.goto(`${alnumOrigin}/account/#/recover`);
      await p.locator('input[name="identifier"]').fill('nobody@example.com');
      await p.getByRole('button', { name: 'Send a code' }).click();
      await step(p, 'Enter the code');
      await expect
        .poll(() => status(p).textContent())
        .toBe('If nobody@example.com belongs to an account, a code is on its way.');
      expect(await attributes(code(p))).toEqual({
        type: 'text',
        autocomplete: 'one-time-code',
        inputmode: 'text',
        maxlength: '8',
        autocapitalize: 'characters',
        spellcheck: 'false',
        pattern: null,
      });
      await p.getByText('The 8-character code in the message we sent.').waitFor();
      await paste(code(p), 'abcd-ef12');
      expect(await code(p).inputValue()).toBe('ABCDEF12');
      // Wider than the numeric one: its width follows the length.
      const width = await code(p).evaluate((el) => el.getBoundingClientRect().width);
      expect(width).toBeGreaterThan(150);
      expect(await p.getByRole('button', { name: 'Send a new code' }).isDisabled()).toBe(true);
      await axeCheck(p, 'recovery code step, alphanumeric code');
      // Back to the first step with the address kept.
      await p.getByRole('button', { name: 'Use a different address' }).click();
      await step(p, 'Find your account');
      expect(await p.locator('input[name="identifier"]').inputValue()).toBe('nobody@example.com');
    } finally {
      await p.close();
    }
  });
});
