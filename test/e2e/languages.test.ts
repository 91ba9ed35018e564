import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium, signInPage } from '../helpers/browser.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { messagesTo } from '../helpers/outbox.js';

/*
 * Issue 27's languages in Chromium: the hosted pages speak the browser's language (French for a
 * `fr-FR` browser), an application's `ui_locales` wins over it, and under the pseudo-locale `en-XA`
 * (every catalogue string wrapped in ⟦ ⟧) no text a person reads inside <main> comes from anywhere
 * but a catalogue, apart from data (addresses, dates, device names, the names the test configured).
 *
 * One app, one browser; one context per language, each with its own person.
 */
const CLIENT = { id: 'partner', secret: `p-${'q'.repeat(40)}`, name: 'Partner Reports' };

let t: TestApp;
let browser: Browser;
let callback: Server;
let origin: string;
let redirectUri: string;
/** Texts (and attributes) found outside the catalogue under en-XA, as "page: text". */
const untranslated: string[] = [];

const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');

/** An authorization request of the third-party client, as an application sends the browser to it. */
function authorizeUrl(params: Record<string, string> = {}): string {
  const q = new URLSearchParams({
    client_id: CLIENT.id,
    response_type: 'code',
    scope: 'openid email',
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
    nonce: randomBytes(8).toString('hex'),
    ...params,
  });
  return `${origin}/oidc/auth?${q}`;
}

beforeAll(async () => {
  callback = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Back at the application</h1>');
  });
  await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock: new ManualClock(new Date()),
    env: {
      ACCOUNT_UI: 'on',
      PUBLIC_ORIGIN: origin,
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: CLIENT.id,
          client_secret: CLIENT.secret,
          client_name: CLIENT.name,
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code'],
        },
      ]),
      // Listed only (its issuer is never reached): the "Continue with" card shows it.
      IDENTITY_PROVIDERS: JSON.stringify([
        {
          name: 'acme',
          displayName: 'Acme',
          issuer: 'http://127.0.0.1:9/',
          clientId: 'c',
          clientSecret: 's',
        },
      ]),
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await new Promise<void>((r) => (callback ? callback.close(() => r()) : r()));
});

async function open(locale: string): Promise<{ context: BrowserContext; page: Page; person: Person }> {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return { context, page, person: await createPerson(t.ctx) };
}

/** Waits for the page whose <h1> matches `heading` (and for the page to settle). */
async function reach(page: Page, heading: RegExp | string): Promise<void> {
  await expect.poll(() => page.locator('main h1').textContent(), { timeout: 10_000 }).toMatch(heading);
}

/**
 * What <main> shows a person that is not inside ⟦ ⟧: its visible text nodes (data left aside) and
 * its aria-label, title, placeholder and alt attributes. Also the document's title.
 */
async function outsideCatalogue(page: Page, root: string): Promise<string[]> {
  return page.evaluate((root) => {
    const DATA = [
      /^[^\s@]+@[^\s@]+$/, // an email address (masked ones too)
      /^[+\d][\d\s().*-]*$/, // a phone number, digits
      /^[\d\s.:,/-]*$/, // digits, dates and times as numbers
      /^(\d{1,3}\.){3}\d{1,3}$/, // an IP address
      /^[\s·—–•…:,()-]*$/, // punctuation between parts
      /^\d{1,2}:\d{2}(\s?[AP]M)?$/i, // a time of day
      /^[A-Z][a-z]{2} \d{1,2}, \d{4}(, \d{1,2}:\d{2}\s?[AP]M)?$/, // a date (en)
      // A device as the service describes it ("Chrome 131 on Linux"; no user agent: "Unknown browser").
      /^\S+( [\d.]+)? on [A-Za-z][\w .]*$/,
      /^Unknown (browser|device)$/,
      /^(Acme|A|Partner Reports)$/, // names the test configured, a provider's mark
    ];
    const isData = (text: string) => DATA.some((re) => re.test(text));
    /** Catalogue strings taken out (innermost first), what is left is data between separators. */
    const wrapped = (text: string) => {
      let rest = text;
      for (let before = ''; before !== rest; ) {
        before = rest;
        rest = rest.replace(/⟦[^⟦⟧]*⟧/g, ' ');
      }
      return rest
        .split(/[·—]/)
        .map((part) => part.trim())
        .every((part) => part === '' || isData(part));
    };
    const found: string[] = [];
    const main = document.querySelector(root) as HTMLElement;
    const hidden = (el: Element | null): boolean => {
      for (let e = el; e && e !== main.parentElement; e = e.parentElement) {
        if (e.getAttribute('aria-hidden') === 'true' || (e as HTMLElement).hidden) return true;
        if (e instanceof HTMLElement && getComputedStyle(e).display === 'none') return true;
      }
      return false;
    };
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = (n.textContent ?? '').trim();
      if (!text || hidden(n.parentElement)) continue;
      if (['SCRIPT', 'STYLE'].includes(n.parentElement?.tagName ?? '')) continue;
      if (!wrapped(text)) found.push(text);
    }
    for (const el of main.querySelectorAll('[aria-label], [title], [placeholder], [alt]')) {
      if (hidden(el)) continue;
      for (const name of ['aria-label', 'title', 'placeholder', 'alt']) {
        const value = el.getAttribute(name)?.trim();
        if (value && !wrapped(value)) found.push(`[${name}] ${value}`);
      }
    }
    if (root === 'main' && !document.title.startsWith('⟦')) found.push(`[document.title] ${document.title}`);
    return found;
  }, root);
}

/** Records what a page shows outside the catalogue (asserted empty at the end, listed in full). */
async function audit(page: Page, name: string, root = 'main'): Promise<void> {
  for (const text of await outsideCatalogue(page, root)) untranslated.push(`${name}: ${text}`);
}

const mainText = (page: Page) => page.locator('main').innerText();

/** Security's recovery codes page: "Create recovery codes" (in any language) opens the step-up box. */
async function openStepUp(page: Page): Promise<void> {
  await page.goto(`${origin}/account/#/security/recovery-codes`);
  await page.locator('#recovery button').first().click();
  await page.locator('#recovery .stepup h3').waitFor();
}

describe('the hosted pages in French (a fr-FR browser)', () => {
  let page: Page;
  let person: Person;
  beforeAll(async () => {
    ({ page, person } = await open('fr-FR'));
  });

  it('an application’s sign-in and consent pages speak French', async () => {
    await page.goto(authorizeUrl());
    await reach(page, `Connectez-vous pour continuer vers ${CLIENT.name}`);
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('fr');
    expect(await mainText(page)).toContain(`${CLIENT.name} utilise votre compte ici pour vous connecter.`);
    await expect.poll(() => page.locator('#providers').textContent()).toContain('Continuer avec Acme');
    expect(await page.title()).toMatch(/^Connectez-vous pour continuer vers/);

    // Signed in inside the page (the hosted session's HttpOnly cookie, as the sign-in form would);
    // the page is on the service's origin (the authorization page).
    await signInPage(page, { refreshToken: (await signIn(t.app, person)).refreshToken });
    await page.goto(authorizeUrl());
    await reach(page, `Autoriser ${CLIENT.name} à utiliser votre compte ?`);
    expect(await page.locator('#scopes').innerText()).toContain('Votre adresse e-mail');
    expect(await mainText(page)).toContain(`N’autorisez que si vous faites confiance à ${CLIENT.name}.`);
    await axeCheck(page, 'consent in French');
    await page.getByRole('button', { name: 'Autoriser', exact: true }).click();
    await page.waitForURL(`${redirectUri}?**`);
  });

  it('the account’s pages speak French', async () => {
    await page.goto(`${origin}/account/#/`);
    await reach(page, 'Votre compte');
    expect(await mainText(page)).toContain('Sécurité');
    await page.goto(`${origin}/account/#/devices`);
    await reach(page, 'Appareils');
    expect(await mainText(page)).toContain('Se déconnecter partout');
    await page.goto(`${origin}/account/#/history`);
    await reach(page, 'Historique des connexions');
    expect(await mainText(page)).toContain('Connexion avec votre mot de passe');
    await page.goto(`${origin}/account/#/apps`);
    await reach(page, 'Applications connectées');
    expect(await page.locator('#apps').innerText()).toContain('Votre adresse e-mail');
    await page.getByRole('button', { name: `Retirer l’accès de ${CLIENT.name}` }).waitFor();
    await axeCheck(page, 'connected apps in French');
  });

  it('the step-up box speaks French', async () => {
    await openStepUp(page);
    const box = page.locator('#recovery .stepup');
    await expect.poll(() => box.locator('h3').textContent()).toBe('Confirmez que c’est bien vous');
    // Where the code went (masked), and only the ways this account has: no second factor, so no
    // recovery code; a new code on demand.
    await box
      .getByText(/^Nous avons envoyé un code à \S\*\*\*@\S+\. Saisissez-le pour continuer\.$/)
      .waitFor();
    await box.getByRole('button', { name: 'Envoyer un nouveau code' }).waitFor();
    await box.locator('.stepup-ways[data-ready]').waitFor({ state: 'attached' });
    expect(await box.getByRole('button', { name: 'Utiliser un code de secours' }).count()).toBe(0);
    await axeCheck(page, 'step-up in French');
    // The pages' language became the identity's (PATCH /account): the code came in French too.
    const row = await t.ctx.database.db
      .selectFrom('identities')
      .select('locale')
      .where('id', '=', person.identityId)
      .executeTakeFirstOrThrow();
    expect(row.locale).toBe('fr');
    await expect
      .poll(() => messagesTo(t.config.dataDir, person.email).at(-1)?.subject)
      .toBe('Votre code de confirmation');
    expect(messagesTo(t.config.dataDir, person.email).at(-1)?.text).toContain(
      'Votre code pour confirmer cette action sensible est',
    );
  });
});

// Issue 46, item 2: a text message speaks the person's language too (no SMS gateway in this run:
// the development outbox holds the text, to the E.164 number).
describe('a texted code in French', () => {
  it('adding a phone number from the French pages texts the code in French', async () => {
    const { page, person: who } = await open('fr-FR');
    await page.goto(`${origin}/account/`);
    await signInPage(page, { refreshToken: (await signIn(t.app, who)).refreshToken });
    // A fresh load: the page finds the session in the cookie, and its language becomes the identity's.
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/security/addresses`);
    await reach(page, 'Adresses e-mail et numéros de téléphone');
    const section = page.locator('#methods');
    await section.getByLabel('Ajouter un numéro de téléphone').fill('06 98 76 54 32');
    await section.getByLabel('Indicatif pays de ce numéro').fill('fr');
    const mails = messagesTo(t.config.dataDir, who.email).length;
    await section.getByRole('button', { name: 'Envoyer un code par SMS à ce numéro' }).click();
    // Adding a way in asks who it is first (the step-up by mail, in French too).
    const box = page.locator('.stepup');
    const confirm = section.getByRole('heading', { name: 'Confirmer 06 98 76 54 32' });
    await Promise.race([box.waitFor(), confirm.waitFor()]);
    if (await box.isVisible()) {
      await expect
        .poll(() => messagesTo(t.config.dataDir, who.email).length, { timeout: 10_000 })
        .toBe(mails + 1);
      const code = /\b(\d{6})\b/.exec(messagesTo(t.config.dataDir, who.email).at(-1)?.text ?? '')?.[1] ?? '';
      await box.getByLabel('Code').fill(code);
      await box.getByRole('button', { name: 'Confirmer', exact: true }).click();
    }
    await confirm.waitFor();
    await expect
      .poll(() => messagesTo(t.config.dataDir, '+33698765432').at(-1)?.text ?? '', { timeout: 10_000 })
      .toContain('Votre code pour confirmer ce nouveau moyen de connexion est');
    const sms = messagesTo(t.config.dataDir, '+33698765432').at(-1);
    expect(sms?.text).not.toMatch(/\b(Your|code is|expires)\b/);
    await axeCheck(page, 'numéro de téléphone, le code envoyé');
    await page.context().close();
  });
});

describe('the pseudo-locale en-XA: every string from a catalogue', () => {
  let page: Page;
  let person: Person;
  beforeAll(async () => {
    ({ page, person } = await open('en-XA'));
  });

  it('an application’s sign-in and consent pages', async () => {
    await page.goto(authorizeUrl());
    await reach(page, `⟦Sign in to continue to ${CLIENT.name}⟧`);
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en-XA');
    await page.locator('#providers button').first().waitFor();
    await audit(page, 'authorize');

    // Signed in inside the page, on the service's origin (as above).
    await signInPage(page, { refreshToken: (await signIn(t.app, person)).refreshToken });
    await page.goto(authorizeUrl());
    await reach(page, `⟦Allow ${CLIENT.name} to use your account?⟧`);
    await audit(page, 'consent');
    await page.locator('main button.primary').click();
    await page.waitForURL(`${redirectUri}?**`);
  });

  it('home, devices, history and connected apps', async () => {
    for (const [route, heading, name] of [
      ['/', '⟦Your account⟧', 'home'],
      ['/devices', '⟦Devices⟧', 'devices'],
      ['/history', '⟦Sign-in history⟧', 'history'],
      ['/apps', '⟦Connected apps⟧', 'apps'],
    ] as const) {
      await page.goto(`${origin}/account/#${route}`);
      await reach(page, heading);
      // The lists come with the page; the apps page also shows the one just allowed.
      if (route === '/apps') await page.locator('#apps li').first().waitFor();
      await audit(page, name);
    }
  });

  it('the step-up box', async () => {
    await openStepUp(page);
    await page.locator('#recovery .stepup input').waitFor();
    await audit(page, 'step-up', '#recovery .stepup');
  });

  it('organizations, one organization, an invitation', async () => {
    await page.goto(`${origin}/account/#/organizations`);
    await reach(page, '⟦Organizations⟧');
    await audit(page, 'organizations');
    await page.locator('input[name="name"]').fill('Acme');
    await page.locator('form button[type="submit"]').click();
    await reach(page, '⟦Acme⟧');
    await page.locator('#member-list li').first().waitFor();
    await audit(page, 'organization');
    // An invitation to another address: its list, then its page as the (wrong) signed-in person sees it.
    const invitee = 'invitee-xa@example.com';
    await page.locator('#invitations input[name="identifier"]').fill(invitee);
    await page.locator('#invitations form button[type="submit"]').click();
    await page.locator('#invitation-list li').first().waitFor();
    await audit(page, 'organization invitations');
    await expect
      .poll(() => messagesTo(t.config.dataDir, invitee).at(-1)?.text ?? '')
      .toContain('/account/#/invitations/');
    const text = messagesTo(t.config.dataDir, invitee).at(-1)?.text ?? '';
    const link = /\S+\/account\/#\/invitations\/[A-Za-z0-9_-]+/.exec(text)?.[0] ?? '';
    await page.goto(link);
    await reach(page, '⟦Invitation⟧');
    await page.locator('#invitation button').click();
    await page.locator('#invitation .alert:not([hidden])').waitFor();
    await audit(page, 'invitation, another account');
  });

  it('an application’s ui_locales wins over the browser’s languages', async () => {
    // Signed in: prompt=login keeps the sign-in page (the application asks to be sure it is you).
    await page.goto(authorizeUrl({ ui_locales: 'de-CH fr-CA en', prompt: 'login' }));
    await reach(page, `Connectez-vous pour continuer vers ${CLIENT.name}`);
    expect(await mainText(page)).toContain(
      `${CLIENT.name} vous demande de vous reconnecter, pour s’assurer que c’est bien vous.`,
    );
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('fr');
    // The frame (skip link, product name) follows the application's language too.
    expect(await page.locator('.skip').textContent()).toBe('Aller au contenu');
    // None spoken: the browser's choice stays.
    await page.goto(authorizeUrl({ ui_locales: 'de-CH', prompt: 'login' }));
    await reach(page, `⟦Sign in to continue to ${CLIENT.name}⟧`);
  });

  it('no page shows a text outside the catalogue', () => {
    expect(untranslated).toEqual([]);
  });
});
