import { type TOTP, URI } from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { addVirtualAuthenticator, axeCheck, launchChromium } from '../helpers/browser.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { bearer, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';

/*
 * Issue 27's sign-in card in Chromium at 1280×800: a centred card about 400 px wide with a
 * full-width button, "Forgot password?" on the password's label row, a show-password toggle, the
 * page's own message (not a browser bubble) on an empty field, a spinner while the request is in
 * flight; the second step with the focus on its code, a passkey way, and a recovery-code sign-in
 * that says how many codes are left (and a spent code refused in those words). axe on each state,
 * light, and dark once. One app, one browser, one page; the tests run in order.
 */

let t: TestApp;
let browser: Browser;
let page: Page;
let origin: string;
let person: Person;
let recoveryCodes: string[] = [];
const clock = new ManualClock(new Date());

const heading = (text: string) => page.getByRole('heading', { level: 1, name: text }).waitFor();
const identifier = () => page.getByLabel('Email or phone number');
const password = () => page.getByLabel('Password', { exact: true });
const signInButton = () => page.getByRole('button', { name: 'Sign in', exact: true });
const box = async (selector: string) => {
  const b = await page.locator(selector).first().boundingBox();
  if (!b) throw new Error(`${selector} is not shown`);
  return b;
};
/** The label (or name) of the focused element's field: its id, for comparing with a field's. */
const focusedId = () => page.evaluate(() => document.activeElement?.id ?? '');

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock,
    env: {
      PUBLIC_ORIGIN: origin,
      WEBAUTHN_RP_ID: 'localhost',
      WEBAUTHN_RP_NAME: 'Card e2e',
      ACCOUNT_UI: 'on',
    },
  });
  await t.app.listen({ host: '127.0.0.1', port });

  // An account with recovery codes and an authenticator, set up through the service's routes.
  const who = await elevatedPerson(t);
  person = who.person;
  const codes = await t.app.inject({ method: 'POST', url: '/api/v1/recovery-codes', headers: who.headers });
  expect(codes.statusCode, codes.body).toBe(201);
  recoveryCodes = codes.json().data.recoveryCodes;
  const enrol = await t.app.inject({
    method: 'POST',
    url: '/api/v1/second-factors',
    headers: who.headers,
    payload: {},
  });
  expect(enrol.statusCode, enrol.body).toBe(201);
  const totp = URI.parse(enrol.json().data.otpauthUri) as TOTP;
  const confirmed = await t.app.inject({
    method: 'POST',
    url: '/api/v1/second-factors/confirmations',
    headers: bearer(who.grant.accessToken),
    payload: { code: totp.generate({ timestamp: clock.now().getTime() }) },
  });
  expect(confirmed.statusCode, confirmed.body).toBe(204);

  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(8000);
  await page.goto(`${origin}/account/#/sign-in`);
  await heading('Sign in');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the sign-in card (issue 27)', () => {
  it('is a centred card about 400 px wide, its first field focused, its buttons full width', async () => {
    const inputId = await identifier().getAttribute('id');
    await expect.poll(focusedId).toBe(inputId);
    const card = await box('.sign-in-card');
    expect(card.width).toBeLessThanOrEqual(440);
    expect(card.width).toBeGreaterThanOrEqual(320);
    const viewport = page.viewportSize()?.width ?? 1280;
    expect(Math.abs(card.x + card.width / 2 - viewport / 2)).toBeLessThan(20);

    const field = await identifier().boundingBox();
    const button = await signInButton().boundingBox();
    const passkey = await page.getByRole('button', { name: 'Sign in with a passkey' }).boundingBox();
    if (!field || !button || !passkey) throw new Error('not shown');
    expect(Math.abs(button.width - field.width)).toBeLessThanOrEqual(1);
    expect(Math.abs(passkey.width - field.width)).toBeLessThanOrEqual(1);
    // The passkey under an "or", below the password's button.
    expect(await page.locator('.or-divider:not([hidden])').count()).toBe(1);
    expect(passkey.y).toBeGreaterThan(button.y + button.height);

    // "Forgot password?" under the password, at its right end.
    const secret = await password().boundingBox();
    const forgot = await page.getByRole('link', { name: 'Forgot password?' }).boundingBox();
    if (!forgot || !secret) throw new Error('no link');
    expect(forgot.y).toBeGreaterThanOrEqual(secret.y + secret.height);
    expect(forgot.y + forgot.height).toBeLessThan(button.y);
    expect(Math.abs(forgot.x + forgot.width - (field.x + field.width))).toBeLessThanOrEqual(2);

    // "New here? Create an account" under the card.
    const create = await page.getByRole('link', { name: 'Create an account' }).boundingBox();
    expect(create?.y ?? 0).toBeGreaterThan(card.y + card.height);
    await axeCheck(page, 'sign-in card');
    await page.emulateMedia({ colorScheme: 'dark' });
    await axeCheck(page, 'sign-in card, dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('tabs from the identifier to the password, its eye, "Forgot password?", then Sign in (issue 46)', async () => {
    /** What has the focus: a field's name, else the link's or button's accessible text. */
    const focus = () =>
      page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el) return '';
        return (el as HTMLInputElement).name || el.getAttribute('aria-label') || el.textContent?.trim() || '';
      });
    await identifier().focus();
    expect(await focus()).toBe('identifier');
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      order.push(await focus());
    }
    expect(order).toEqual(['password', 'Show password', 'Forgot password?', 'Sign in']);
  });

  it('shows the password on demand with an eye inside the field, the field keeping its width', async () => {
    const wide = await identifier().boundingBox();
    const narrow = await password().boundingBox();
    const eye = await page.getByRole('button', { name: 'Show password' }).boundingBox();
    if (!wide || !narrow || !eye) throw new Error('not shown');
    // As wide as the identifier, the eye within its box at the right end.
    expect(Math.abs(narrow.width - wide.width)).toBeLessThanOrEqual(1);
    expect(eye.x).toBeGreaterThan(narrow.x + narrow.width / 2);
    expect(eye.x + eye.width).toBeLessThanOrEqual(narrow.x + narrow.width);
    expect(eye.y).toBeGreaterThanOrEqual(narrow.y);
    expect(eye.y + eye.height).toBeLessThanOrEqual(narrow.y + narrow.height);
    expect(await page.locator('.password-toggle svg').count()).toBe(1);
    expect((await page.locator('.password-toggle').innerText()).trim()).toBe('');
  });

  it('shows the password on demand, the focus staying in the field', async () => {
    await password().fill('a secret to show');
    await password().focus();
    const toggle = page.getByRole('button', { name: 'Show password' });
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await toggle.click();
    expect(await password().getAttribute('type')).toBe('text');
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    expect(await focusedId()).toBe(await password().getAttribute('id'));
    await axeCheck(page, 'password shown');
    await toggle.click();
    expect(await password().getAttribute('type')).toBe('password');
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await password().fill('');
  });

  it('names an empty field on the field itself, with no browser bubble and nothing sent', async () => {
    let sent = 0;
    page.on('request', (r) => {
      if (r.url().endsWith('/api/v1/sign-ins')) sent++;
    });
    expect(await page.locator('.sign-in-card form').evaluate((f) => (f as HTMLFormElement).noValidate)).toBe(
      true,
    );
    await signInButton().click();
    const message = page.getByText('Enter your email or phone number.');
    await message.waitFor();
    expect(await identifier().getAttribute('aria-invalid')).toBe('true');
    const errorId = await message.getAttribute('id');
    expect((await identifier().getAttribute('aria-describedby'))?.split(' ')).toContain(errorId);
    expect(await focusedId()).toBe(await identifier().getAttribute('id'));
    await page.getByText('Enter your password.').waitFor();
    expect(await password().getAttribute('aria-invalid')).toBe('true');
    expect(sent).toBe(0);
    await axeCheck(page, 'empty fields named');
  });

  it('marks both fields invalid after a refused sign-in, the same for a wrong password and an unknown address, until edited (issue 46)', async () => {
    const marks = async () => {
      const alert = page.locator('.sign-in-card .alert:not([hidden])').first();
      const alertId = await alert.getAttribute('id');
      const of = async (input: ReturnType<typeof password>) => ({
        invalid: await input.getAttribute('aria-invalid'),
        linked: ((await input.getAttribute('aria-describedby')) ?? '').split(' ').includes(alertId ?? '-'),
      });
      return {
        alert: await alert.textContent(),
        identifier: await of(identifier()),
        password: await of(password()),
        // What else shows between the heading and the fields (no offer to confirm).
        offers: await page.locator('.way-on:not([hidden])').count(),
      };
    };
    const refused = async (who: string, secret: string) => {
      await identifier().fill(who);
      await password().fill(secret);
      const answer = page.waitForResponse((r) => r.url().endsWith('/api/v1/sign-ins'));
      await signInButton().click();
      expect((await answer).status()).toBe(401);
      await expect.poll(() => password().getAttribute('aria-invalid')).toBe('true');
      return marks();
    };
    const wrong = await refused(person.email, 'not-the-password-at-all');
    expect(wrong.identifier).toEqual({ invalid: 'true', linked: true });
    expect(wrong.password).toEqual({ invalid: 'true', linked: true });
    await axeCheck(page, 'wrong password marked');
    await page.emulateMedia({ colorScheme: 'dark' });
    await axeCheck(page, 'wrong password marked, dark');
    await page.emulateMedia({ colorScheme: 'light' });
    const unknown = await refused('nobody-here@example.com', 'not-the-password-at-all');
    expect(unknown).toEqual(wrong);
    // Editing a field takes its mark away (and its link to the alert); the other keeps its own.
    await password().press('End');
    await password().press('x');
    expect(await password().getAttribute('aria-invalid')).toBeNull();
    expect(await password().getAttribute('aria-describedby')).toBeNull();
    expect(await identifier().getAttribute('aria-invalid')).toBe('true');
    await identifier().fill('');
    await password().fill('');
  });

  it('shows a spinner on the button while the sign-in is on its way, then the second step focused', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let passed!: () => void;
    const through = new Promise<void>((r) => {
      passed = r;
    });
    await page.route('**/api/v1/sign-ins', async (route) => {
      await held;
      await route.continue();
      passed();
    });
    await identifier().fill(person.email);
    await password().fill(person.password);
    await signInButton().click();
    await expect.poll(() => signInButton().getAttribute('class')).toContain('busy');
    expect(await signInButton().getAttribute('aria-busy')).toBe('true');
    // The label stays: the spinner is the button's ::after.
    expect(await signInButton().textContent()).toBe('Sign in');
    await axeCheck(page, 'signing in');
    release();
    await through;
    await page.unroute('**/api/v1/sign-ins');

    await heading('2-step verification');
    const code = page.getByLabel('Authenticator code');
    await expect.poll(focusedId).toBe(await code.getAttribute('id'));
    await page.getByRole('button', { name: 'Use a passkey instead' }).waitFor();
    await axeCheck(page, 'second step');

    // A wrong code: the code input marked, linked to the alert that says so, until edited.
    await code.fill('000000');
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => code.getAttribute('aria-invalid')).toBe('true');
    const alertId = await page.locator('.sign-in-card .alert:not([hidden])').first().getAttribute('id');
    expect((await code.getAttribute('aria-describedby'))?.split(' ')).toContain(alertId);
    await axeCheck(page, 'wrong code marked');
    await code.fill('');
    await code.press('1');
    expect(await code.getAttribute('aria-invalid')).toBeNull();
    await code.fill('');
  });

  it('a recovery code signs in and says how many are left', async () => {
    await page.getByRole('button', { name: 'Use a recovery code instead' }).click();
    await page.getByLabel('Recovery code').fill(recoveryCodes[0]);
    await page.getByRole('button', { name: 'Continue' }).click();
    const left = page.getByText('You have 9 recovery codes left. Make new ones in Security.');
    await left.waitFor();
    await axeCheck(page, 'recovery codes left');
    await page.emulateMedia({ colorScheme: 'dark' });
    await axeCheck(page, 'recovery codes left, dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.getByRole('button', { name: 'Continue' }).click();
    await heading('Your account');
  });

  it('a spent recovery code is refused in words that say each works once', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading('Sign in');
    await identifier().fill(person.email);
    await password().fill(person.password);
    await signInButton().click();
    await heading('2-step verification');
    await page.getByRole('button', { name: 'Use a recovery code instead' }).click();
    await page.getByLabel('Recovery code').fill(recoveryCodes[0]);
    await page.getByRole('button', { name: 'Continue' }).click();
    const alert = page
      .getByRole('alert')
      .filter({ hasText: 'That recovery code was not accepted. Each code works only once' });
    await alert.waitFor();
    expect(await alert.evaluate((el) => el === document.activeElement)).toBe(true);
    const recovery = page.getByLabel('Recovery code');
    expect(await recovery.getAttribute('aria-invalid')).toBe('true');
    expect((await recovery.getAttribute('aria-describedby'))?.split(' ')).toContain(
      await alert.getAttribute('id'),
    );
    await axeCheck(page, 'spent recovery code');
  });

  it('offers passkeys in the identifier field: a conditional request from the page shown until it is left or the button is pressed (issue 46)', async () => {
    // Headless Chromium shows no autofill list to pick a passkey from: what the page asks of the
    // browser is recorded instead (each navigator.credentials.get, its mediation, its abort).
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await context.addInitScript(() => {
        const calls: { mediation: string | null; aborted: boolean }[] = [];
        Object.assign(window, { passkeyGets: calls });
        const get = navigator.credentials.get.bind(navigator.credentials);
        navigator.credentials.get = (options?: CredentialRequestOptions) => {
          const entry = { mediation: options?.mediation ?? null, aborted: false };
          calls.push(entry);
          options?.signal?.addEventListener('abort', () => {
            entry.aborted = true;
          });
          return get(options);
        };
      });
      const p = await context.newPage();
      p.setDefaultTimeout(8000);
      await p.goto(`${origin}/account/#/sign-in`);
      await addVirtualAuthenticator(p);
      await p.reload();
      const gets = () =>
        p.evaluate(
          () =>
            (window as unknown as { passkeyGets: { mediation: string | null; aborted: boolean }[] })
              .passkeyGets,
        );
      const options = p.waitForRequest((r) => r.url().endsWith('/api/v1/sign-ins/passkeys/options'));
      await p.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      expect(await p.getByLabel('Email or phone number').getAttribute('autocomplete')).toBe(
        'username webauthn',
      );
      await options;
      await expect.poll(gets).toEqual([{ mediation: 'conditional', aborted: false }]);

      // Leaving the page aborts it; coming back asks again.
      await p.getByRole('link', { name: 'Create an account' }).click();
      await p.getByRole('heading', { level: 1, name: 'Create an account' }).waitFor();
      await expect.poll(gets).toEqual([{ mediation: 'conditional', aborted: true }]);
      await p.goBack();
      await p.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
      await expect.poll(async () => (await gets()).length).toBe(2);
      expect((await gets())[1]).toEqual({ mediation: 'conditional', aborted: false });

      // The button aborts the autofill's request before asking its own (a modal one).
      await p.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await expect.poll(async () => (await gets()).length).toBe(3);
      expect(await gets()).toEqual([
        { mediation: 'conditional', aborted: true },
        { mediation: 'conditional', aborted: true },
        { mediation: null, aborted: false },
      ]);
      // No passkey on this (virtual) device: said, with no "a request is already pending".
      await p.locator('.passkey-way .alert:not([hidden])').waitFor();
      expect(await p.locator('.passkey-way .alert').textContent()).not.toMatch(/pending/i);
      await axeCheck(p, 'passkey button after the autofill request');
    } finally {
      await context.close();
    }
  });

  it('puts sign-in, sign-up and recovery on the same centred card, "Continue with …" above the form with each preset\'s mark (issue 46)', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const p = await context.newPage();
      p.setDefaultTimeout(8000);
      // The provider list as a deployment with the four presets and one of its own would answer.
      await p.route('**/api/v1/providers', (route) =>
        route.fulfill({
          contentType: 'application/json',
          body: JSON.stringify({
            data: [
              { name: 'google', displayName: 'Google', preset: 'google' },
              { name: 'apple', displayName: 'Apple', preset: 'apple' },
              { name: 'github', displayName: 'GitHub', preset: 'github' },
              { name: 'microsoft', displayName: 'Microsoft', preset: 'microsoft' },
              { name: 'acme', displayName: 'Acme', preset: null },
            ],
          }),
        }),
      );
      const centred = async (what: string) => {
        const card = await p.locator('main > .sign-in-card').boundingBox();
        if (!card) throw new Error(`${what}: no card`);
        expect(card.width, what).toBeLessThanOrEqual(440);
        expect(card.width, what).toBeGreaterThanOrEqual(320);
        expect(Math.abs(card.x + card.width / 2 - 640), what).toBeLessThan(20);
      };
      const marks = () =>
        p
          .locator('#providers button')
          .evaluateAll((buttons) =>
            buttons.map((b) => [
              b.textContent,
              b.querySelector('svg')?.getAttribute('class') ?? b.querySelector('.provider-mark')?.textContent,
            ]),
          );
      const expected = [
        ['Continue with Google', 'provider-logo provider-logo-google'],
        ['Continue with Apple', 'provider-logo provider-logo-apple'],
        ['Continue with GitHub', 'provider-logo provider-logo-github'],
        ['Continue with Microsoft', 'provider-logo provider-logo-microsoft'],
        ['AContinue with Acme', 'A'],
      ];

      for (const [route, title, first] of [
        ['sign-in', 'Sign in', 'Email or phone number'],
        ['sign-up', 'Create an account', 'Email or phone number'],
      ] as const) {
        await p.goto(`${origin}/account/#/${route}`);
        await p.getByRole('heading', { level: 1, name: title }).waitFor();
        await expect.poll(marks).toEqual(expected);
        await p.getByRole('button', { name: 'Continue with Google', exact: true }).waitFor();
        await centred(route);
        // Above the form, with an "or" between them.
        const last = await p.locator('#providers button').last().boundingBox();
        const or = await p.locator('.sign-in-card .or-divider').first().boundingBox();
        const field = await p.getByLabel(first).boundingBox();
        if (!last || !or || !field) throw new Error(`${route}: not shown`);
        expect(last.y + last.height).toBeLessThanOrEqual(or.y);
        expect(or.y + or.height).toBeLessThanOrEqual(field.y);
        await axeCheck(p, `${route} with providers`);
        await p.emulateMedia({ colorScheme: 'dark' });
        await axeCheck(p, `${route} with providers, dark`);
        await p.emulateMedia({ colorScheme: 'light' });
      }
      await p.goto(`${origin}/account/#/recover`);
      await p.getByRole('heading', { level: 1, name: 'Forgot your password' }).waitFor();
      await centred('recover');
    } finally {
      await context.close();
    }
  });

  it('speaks French in a French browser, its own checks too', async () => {
    const context = await browser.newContext({ locale: 'fr-FR', viewport: { width: 1280, height: 800 } });
    try {
      const fr = await context.newPage();
      fr.setDefaultTimeout(8000);
      await fr.goto(`${origin}/account/#/sign-in`);
      await fr.getByRole('heading', { level: 1, name: 'Connexion' }).waitFor();
      await fr.getByRole('link', { name: 'Mot de passe oublié ?' }).waitFor();
      await fr.getByRole('button', { name: 'Afficher le mot de passe' }).waitFor();
      // The eye does not squeeze the French password field: as wide as the identifier.
      const frWide = await fr.getByLabel('Adresse e-mail ou numéro de téléphone').boundingBox();
      const frPassword = await fr.getByLabel('Mot de passe', { exact: true }).boundingBox();
      expect(Math.abs((frPassword?.width ?? 0) - (frWide?.width ?? -9))).toBeLessThanOrEqual(1);
      await fr.getByRole('button', { name: 'Se connecter', exact: true }).click();
      await fr.getByText('Saisissez votre adresse e-mail ou votre numéro de téléphone.').waitFor();
      await fr.getByText('Saisissez votre mot de passe.').waitFor();
      expect(await fr.locator('main').innerText()).toContain('Nouveau ici ?');
      await axeCheck(fr, 'sign-in card in French');
    } finally {
      await context.close();
    }
  });
});
