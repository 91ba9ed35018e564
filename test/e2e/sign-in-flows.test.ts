import { Secret, TOTP } from 'otpauth';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import {
  type SmtpSink,
  mailCode as sinkCode,
  mailCount as sinkCount,
  startSmtpSink,
} from '../helpers/smtp.js';

/**
 * Issue 27's broken sign-in flows, in a real browser against a real service: a phone number signs
 * up and signs in through the one identifier field (texts land in the development outbox, mail in
 * an SMTP sink); the pending steps of sign-up, sign-in and recovery survive a reload; a refused
 * sign-in of an account never confirmed offers the way to confirm it; an authenticator setup can
 * be cancelled; the second step's code is the shared one-time-code input, its recovery code an
 * input of its own. One app, one browser, one page; the tests run in order and share the accounts.
 */
const PHONE_NATIONAL = '06 12 34 56 78';
const PHONE = '+33612345678';
const EMAIL = 'lin@example.com';
let phonePassword = 'cobalt-harbour-willow-31';
const emailPassword = 'saffron-lattice-pebble-64';

let t: TestApp;
let smtp: SmtpSink;
let browser: Browser;
let page: Page;
let origin: string;
let totpSecret = '';
/** The phone account's recovery codes, issued as the authenticator setup's last step. */
let recoveryCodes: string[] = [];
const pageErrors: string[] = [];

/** The service's clock starts at the real time (the browser judges expiry by it) and moves on by hand. */
const clock = new ManualClock(new Date());

function totp(): string {
  // A code is accepted once per time step: each use moves the service's clock one period on.
  clock.advance(30);
  return new TOTP({ secret: Secret.fromBase32(totpSecret) }).generate({ timestamp: clock.now().getTime() });
}

const mailCode = (to: string, count: number) => sinkCode(smtp, to, count);
const mailCount = (to: string) => sinkCount(smtp, to);
const textCount = () => messagesTo(t.config.dataDir, PHONE).length;
const textCode = (count: number) => waitForCode(t.config.dataDir, PHONE, count, 10_000);

const heading = (text: string | RegExp) => page.getByRole('heading', { level: 1, name: text }).waitFor();
const step = (text: string) => page.getByRole('heading', { level: 2, name: text }).waitFor();
const identifier = () => page.getByLabel('Email or phone number');
const country = () => page.getByLabel('Country of the phone number');
const signInButton = () => page.getByRole('button', { name: 'Sign in', exact: true });
/** What this tab's scripts can read in both storage areas. */
/** Whether `el` has the focus. */
const focused = (el: Locator) => () => el.evaluate((e) => e === document.activeElement);
/** Pastes `text` into `input` as a browser does (a paste event carrying the clipboard's text). */
function paste(input: Locator, text: string): Promise<void> {
  return input.evaluate((el, pasted) => {
    const data = new DataTransfer();
    data.setData('text/plain', pasted);
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}
const storage = () =>
  page.evaluate(() => {
    const dump = (s: Storage) => Object.keys(s).map((k) => `${k}=${s.getItem(k)}`);
    return { local: dump(localStorage).join('\n'), session: dump(sessionStorage).join('\n') };
  });

async function signOut(): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading('Sign in');
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
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale: 'en-US' });
  page = await context.newPage();
  page.setDefaultTimeout(8000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
});

describe('sign-in flows in Chromium (issue 27)', () => {
  it('a phone number signs up in its national form, and the confirm step survives a reload', async () => {
    await page.goto(`${origin}/account/#/sign-up`);
    await heading('Create an account');
    // The country picker shows only for a phone number in its national form.
    expect(await country().isVisible()).toBe(false);
    await identifier().fill(PHONE_NATIONAL);
    await country().waitFor();
    // It starts at the browser's region (en-US).
    expect(await country().inputValue()).toBe('US');
    expect(await identifier().getAttribute('autocomplete')).toBe('tel');
    await country().selectOption('FR');
    await axeCheck(page, 'sign-up with a phone number');
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await page.getByRole('button', { name: 'Create account' }).click();
    await step('Confirm your phone number');
    const code = await textCode(1);

    await page.reload();
    await step('Confirm your phone number');
    // The step is kept for this tab, never the password: it asks for it again.
    const kept = await storage();
    expect(kept.session).toContain(PHONE_NATIONAL);
    expect(kept.session).not.toContain(phonePassword);
    expect(kept.local).not.toContain(PHONE_NATIONAL);
    expect(page.url()).not.toContain('612');
    await axeCheck(page, 'sign-up confirm step after a reload');
    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByLabel('The password you chose').fill(phonePassword);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await heading('Your account');
    // The home page lists the number (masked or, to its owner, in full) under the ways in.
    await page
      .getByText(/\+33[\s*\d]*78/)
      .first()
      .waitFor();
    expect((await storage()).session).not.toContain(PHONE_NATIONAL);
  });

  it('an authenticator setup can be cancelled, then started again', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Security' }).click();
    await heading('Security');
    await page.locator('#row-two-step').click();
    await heading('2-step verification');
    const before = textCount();
    const start = page.getByRole('button', { name: 'Set up an authenticator app' });
    await start.click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).first().waitFor();
    await page
      .locator('.stepup')
      .getByLabel('Code')
      .fill(await textCode(before + 1));
    await page.locator('.stepup').getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('heading', { name: 'Scan this code with your app' }).waitFor();
    const abandoned = ((await page.locator('#totp-secret').textContent()) ?? '').trim();
    await axeCheck(page, 'authenticator setup with its cancel button');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    // Back at the start, the focus on the start button, nothing added.
    await start.waitFor();
    expect(await start.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(await page.locator('#totp-secret').count()).toBe(0);
    expect(await page.locator('#authenticator').textContent()).toContain('Add a second step to sign-in');
    await axeCheck(page, 'authenticator setup cancelled');

    // Starting again works (the elevation is still alive) and replaces the abandoned secret.
    await start.click();
    await page.getByRole('heading', { name: 'Scan this code with your app' }).waitFor();
    totpSecret = ((await page.locator('#totp-secret').textContent()) ?? '').trim();
    expect(totpSecret).toMatch(/^[A-Z2-7]{32}$/);
    expect(totpSecret).not.toBe(abandoned);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByLabel('Code from the app').fill(totp());
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByText('Authenticator app added.').waitFor();
    await page.locator('#recovery-codes li').first().waitFor();
    recoveryCodes = (await page.locator('#recovery-codes li').allTextContents()).map((c) => c.trim());
    expect(recoveryCodes).toHaveLength(10);
  });

  it('the phone number signs in (international form), and the second step survives a reload', async () => {
    await signOut();
    await axeCheck(page, 'sign-in with the identifier field');
    await identifier().fill('+33 6 12 34 56 78');
    // An international number carries its country: no picker.
    expect(await country().isVisible()).toBe(false);
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await signInButton().click();
    await heading('2-step verification');

    await page.reload();
    await heading('2-step verification');
    expect(await page.getByText('Your sign-in has expired').count()).toBe(0);
    expect(page.url()).toMatch(/#\/sign-in\/second-factor$/);
    expect((await storage()).local).not.toMatch(/ticket/i);
    await page.getByLabel('Authenticator code').fill(totp());
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading('Your account');
    expect((await storage()).session).not.toMatch(/ticket/i);
  });

  it('the second step: the one-time-code input, and a recovery code in any case, hyphens or not', async () => {
    await signOut();
    await identifier().fill(PHONE);
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await signInButton().click();
    await heading('2-step verification');
    const code = page.getByLabel('Authenticator code');
    const recovery = page.getByLabel('Recovery code');
    const toggle = (name: string) => page.getByRole('button', { name }).click();
    const submit = () => page.getByRole('button', { name: 'Continue' }).click();
    // The shared code input (ui/otp.ts), focused at load.
    await expect.poll(focused(code)).toBe(true);
    expect(await code.getAttribute('autocomplete')).toBe('one-time-code');
    expect(await code.getAttribute('inputmode')).toBe('numeric');
    expect(await code.getAttribute('maxlength')).toBe('8');
    expect(await code.getAttribute('class')).toContain('code-input');
    // Its hint says how long the code is.
    await page.getByText('The 6-digit code your authenticator app shows now.').waitFor();
    // A whole code pasted with a space keeps its digits; typed letters do not stay.
    await paste(code, '123 456');
    expect(await code.inputValue()).toBe('123456');
    await code.fill('');
    await code.pressSequentially('12a3');
    expect(await code.inputValue()).toBe('123');
    // Too short: named on the field, nothing sent.
    await submit();
    await page.getByText('Enter the whole code your authenticator app shows.').waitFor();
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    await axeCheck(page, 'second step, code too short');

    // "Use a recovery code instead": an input of its own, text, focused; the code input hidden.
    await toggle('Use a recovery code instead');
    await expect.poll(focused(recovery)).toBe(true);
    expect(await code.isVisible()).toBe(false);
    expect(await recovery.getAttribute('inputmode')).not.toBe('numeric');
    expect(await recovery.getAttribute('autocomplete')).not.toBe('one-time-code');
    await page.getByText(/One of the recovery codes you saved/).waitFor();
    await recovery.pressSequentially('abcd-EFGH');
    expect(await recovery.inputValue()).toBe('abcd-EFGH');
    await axeCheck(page, 'second step, recovery code');
    // And back: the code input again, empty, focused, its error gone.
    await toggle('Use an authenticator code instead');
    await expect.poll(focused(code)).toBe(true);
    expect(await code.inputValue()).toBe('');
    expect(await code.getAttribute('aria-invalid')).toBeNull();
    expect(await recovery.isVisible()).toBe(false);
    await toggle('Use a recovery code instead');
    expect(await recovery.inputValue()).toBe('');

    // A recovery code in lower case, without its hyphens, pasted with spaces around: signed in, with
    // the warning of how many are left.
    await recovery.fill(` ${recoveryCodes[0].replace(/-/g, '').toLowerCase()} `);
    await submit();
    await page.getByText('You have 9 recovery codes left. Make new ones in Security.').waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading('Your account');

    // The same code again (as shown, hyphens and upper case): the spent-code message.
    await signOut();
    await identifier().fill(PHONE);
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await signInButton().click();
    await heading('2-step verification');
    await toggle('Use a recovery code instead');
    await recovery.fill(recoveryCodes[0]);
    await submit();
    const alert = page
      .getByRole('alert')
      .filter({ hasText: 'That recovery code was not accepted. Each code works only once' });
    await alert.waitFor();
    expect(await alert.evaluate((el) => el === document.activeElement)).toBe(true);
    // The authenticator's code still signs in from here.
    await toggle('Use an authenticator code instead');
    await code.fill(totp());
    await submit();
    await heading('Your account');
  });

  it('an expired second step says so, and "Start again" forgets a pending one', async () => {
    await signOut();
    await identifier().fill(PHONE);
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await signInButton().click();
    await heading('2-step verification');
    // The ticket's expiry passes (the browser judges it by its own clock).
    await page.evaluate(() => {
      for (const key of Object.keys(sessionStorage)) {
        const value = JSON.parse(sessionStorage.getItem(key) ?? 'null');
        if (value?.ticket)
          sessionStorage.setItem(key, JSON.stringify({ ...value, expiresAt: '2000-01-01T00:00:00Z' }));
      }
    });
    await page.reload();
    await heading('2-step verification');
    await page.getByText('Your sign-in has expired').waitFor();
    expect((await storage()).session).not.toMatch(/ticket/i);
    await page.getByRole('link', { name: 'Sign in again' }).click();
    await heading('Sign in');

    await identifier().fill(PHONE);
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await signInButton().click();
    await heading('2-step verification');
    await page.getByRole('link', { name: 'Start again' }).click();
    await heading('Sign in');
    expect((await storage()).session).not.toMatch(/ticket/i);
  });

  it('signing in to an account never confirmed offers the way to confirm it', async () => {
    await page.getByRole('link', { name: 'Create an account' }).click();
    await heading('Create an account');
    await identifier().fill(EMAIL);
    expect(await country().isVisible()).toBe(false);
    await page.getByLabel('Password', { exact: true }).fill(emailPassword);
    await page.getByRole('button', { name: 'Create account' }).click();
    await step('Confirm your address');
    // The person leaves without entering the code.
    await page.getByRole('button', { name: 'Use a different address' }).click();
    await step('Your address and a password');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await heading('Sign in');

    await identifier().fill(EMAIL);
    await page.getByLabel('Password', { exact: true }).fill(emailPassword);
    await signInButton().click();
    await page.getByRole('alert').filter({ hasText: 'do not match an account' }).waitFor();
    await page.getByText('Registered but never entered the code?').waitFor();
    // Under the Sign in button, not between the alert and the fields (issue 46).
    const offer = await page.getByText('Registered but never entered the code?').boundingBox();
    const button = await signInButton().boundingBox();
    const alert = await page.getByRole('alert').filter({ hasText: 'do not match an account' }).boundingBox();
    const field = await identifier().boundingBox();
    if (!offer || !button || !alert || !field) throw new Error('not shown');
    expect(offer.y).toBeGreaterThanOrEqual(button.y + button.height);
    expect(alert.y).toBeLessThan(field.y);
    await axeCheck(page, 'sign-in refused with the way to confirm');
    await page.emulateMedia({ colorScheme: 'dark' });
    await axeCheck(page, 'sign-in refused with the way to confirm, dark');
    await page.emulateMedia({ colorScheme: 'light' });
    const before = mailCount(EMAIL);
    await page.getByRole('button', { name: 'Confirm your address' }).click();
    await step('Confirm your address');
    // The password came along in memory: only the code is asked.
    expect(await page.getByLabel('The password you chose').count()).toBe(0);
    await page.getByLabel('Code', { exact: true }).fill(await mailCode(EMAIL, before + 1));
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await heading('Your account');
    await page
      .getByText(/l\*\*\*@example\.com|lin@example\.com/)
      .first()
      .waitFor();
  });

  it('a confirmed address with a wrong password is told to check it or reset it', async () => {
    await signOut();
    await identifier().fill(EMAIL);
    await page.getByLabel('Password', { exact: true }).fill('not-the-right-password-9');
    await signInButton().click();
    await page.getByText('Registered but never entered the code?').waitFor();
    const before = mailCount(EMAIL);
    await page.getByRole('button', { name: 'Confirm your address' }).click();
    await page.getByText('This address is already confirmed. Check your password, or reset it.').waitFor();
    expect(mailCount(EMAIL)).toBe(before);
    await axeCheck(page, 'sign-in refused, address already confirmed');
    await page.getByRole('link', { name: 'Reset your password' }).click();
    await heading('Forgot your password');
  });

  it('the recovery code step survives a reload, for a phone number too', async () => {
    const before = textCount();
    await identifier().fill(PHONE_NATIONAL);
    await country().selectOption('FR');
    await axeCheck(page, 'recovery with the identifier field');
    await page.getByRole('button', { name: 'Send a code' }).click();
    await step('Enter the code');
    const code = await textCode(before + 1);
    await page.reload();
    await step('Enter the code');
    await axeCheck(page, 'recovery code step after a reload');
    await page.getByLabel('Code', { exact: true }).fill(code);
    phonePassword = 'meadow-quartz-lantern-27';
    await page.getByLabel('New password').fill(phonePassword);
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByText('Your new password is set').waitFor();
    expect((await storage()).session).not.toContain(PHONE_NATIONAL);
    await page.getByRole('link', { name: 'Sign in with the new password' }).click();
    await identifier().fill(PHONE);
    await page.getByLabel('Password', { exact: true }).fill(phonePassword);
    await signInButton().click();
    await heading('2-step verification');
    await page.getByLabel('Authenticator code').fill(totp());
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading('Your account');
    expect(pageErrors).toEqual([]);
  });
});
