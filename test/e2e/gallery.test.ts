import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertMembership } from '../../src/features/organizations/repository.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium, signInPage } from '../helpers/browser.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { messagesTo } from '../helpers/outbox.js';

/**
 * The hosted pages in every combination a person meets them (issue 27): desktop (1280×800) and
 * phone (375×812), light and dark, English and French. Each page is checked by axe-core in each
 * combination (colour contrast included, so the dark theme is checked on every page, not only on
 * the sign-in page), its heading is in the expected language, and a screenshot is saved to
 * docs/ui/gallery/<page>.<language>.<theme>.<screen>.png for docs/ui/README.md.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const GALLERY = join(ROOT, 'docs/ui/gallery');

const SCREENS = { desktop: { width: 1280, height: 800 }, phone: { width: 375, height: 812 } } as const;
const THEMES = ['light', 'dark'] as const;
const LANGUAGES = { en: 'en-GB', fr: 'fr-FR' } as const;

/**
 * Each page's route and its heading in each language; `reach` opens a state of the page that has
 * no route of its own, and `step` is its <h2> in each language.
 */
interface GalleryPage {
  name: string;
  /**
   * Under the account pages (`#/…`), or from the origin when it starts with `/` (an application's
   * authorization request); a function when it names what beforeAll made (an organization's id).
   */
  route: string | (() => string);
  signedIn: boolean;
  heading: { en: string; fr: string };
  reach?: (page: Page, language: 'en' | 'fr') => Promise<void>;
  step?: { en: string; fr: string };
}
const PAGES: readonly GalleryPage[] = [
  { name: 'sign-in', route: '#/sign-in', signedIn: false, heading: { en: 'Sign in', fr: 'Connexion' } },
  // Sign-in by code (SIGN_IN_CODES=email): the code step, a code just sent to an address typed.
  {
    name: 'sign-in-code',
    route: '#/sign-in',
    signedIn: false,
    heading: { en: 'Sign in', fr: 'Connexion' },
    async reach(page, language) {
      await page.locator('input[name="identifier"]').fill('someone@example.com');
      await page
        .getByRole('button', { name: language === 'en' ? 'Email me a code' : 'M’envoyer un code par e-mail' })
        .click();
      // "We sent a code to …" is written a moment after the step is drawn.
      await page.locator('.code-sent').filter({ hasText: 'someone@example.com' }).waitFor();
    },
    step: { en: 'Check your email', fr: 'Consultez vos e-mails' },
  },
  // A sign-in code's link (SIGN_IN_LINKS), asked from elsewhere: "Continue as …" under the warning.
  {
    name: 'sign-in-link',
    route: '#/sign-in',
    signedIn: false,
    heading: { en: 'Sign in', fr: 'Connexion' },
    async reach(page, language) {
      await page.goto('about:blank');
      await page.goto(await signInLink(person.email));
      await page
        .getByRole('button', { name: language === 'en' ? /^Continue as / : /^Continuer en tant que / })
        .waitFor();
    },
  },
  // An invitation opened signed out: who invited (their name and address), to what, as which role.
  {
    name: 'invitation',
    route: () => invitation.slice(invitation.indexOf('#')),
    signedIn: false,
    heading: { en: 'Invitation', fr: 'Invitation' },
    async reach(page) {
      await page.locator('#invitation h2, main h2').first().waitFor();
    },
  },
  // The home page with a name and a picture, and Security's short summary.
  { name: 'home', route: '#/', signedIn: true, heading: { en: 'Your account', fr: 'Votre compte' } },
  { name: 'security', route: '#/security', signedIn: true, heading: { en: 'Security', fr: 'Sécurité' } },
  { name: 'devices', route: '#/devices', signedIn: true, heading: { en: 'Devices', fr: 'Appareils' } },
  // Delete your account: the identifier to type, before the step-up.
  {
    name: 'delete-account',
    route: '#/security/delete',
    signedIn: true,
    heading: { en: 'Delete your account', fr: 'Supprimer votre compte' },
  },
  // A third-party application's consent, asked by its authorization request: the signed-in
  // account, the application's links, what it asks for.
  {
    name: 'consent',
    route: () =>
      `/oidc/auth?${new URLSearchParams({
        client_id: 'reports',
        redirect_uri: 'https://reports.example/callback',
        response_type: 'code',
        scope: 'openid email profile',
        state: 'gallery-state',
        nonce: 'gallery-nonce',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })}`,
    signedIn: true,
    heading: {
      en: 'Allow Partner Reports to use your account?',
      fr: 'Autoriser Partner Reports à utiliser votre compte ?',
    },
  },
  // An organization as its owner sees it: members and invitations by their address, the configured
  // role (ORGANIZATION_ROLES) in the pickers under its display name.
  {
    name: 'organization',
    route: () => `#/organizations/${organizationId}`,
    signedIn: true,
    heading: { en: 'Umbrella', fr: 'Umbrella' },
    async reach(page) {
      await page.locator('#member-list li').nth(1).waitFor();
      await page.locator('#invitation-list li').first().waitFor();
    },
  },
  {
    name: 'transfer',
    route: () => `#/organizations/${organizationId}/transfer`,
    signedIn: true,
    heading: { en: 'Transfer ownership', fr: 'Transférer la propriété' },
  },
];

/**
 * What the signed-in pages show: the person's name and picture, an organization they own with a
 * member in the configured role, and a pending invitation (its link is the invitation page's).
 */
async function furnish(): Promise<void> {
  const { accessToken } = await signIn(t.app, person);
  const as = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${accessToken}`, ...extra });
  const ok = (res: { statusCode: number; body: string }, status: number) =>
    expect(res.statusCode, res.body).toBe(status);
  ok(
    await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/account',
      headers: as(),
      payload: { givenName: 'Mara', familyName: 'Lindqvist' },
    }),
    200,
  );
  const picture = await sharp({
    create: { width: 256, height: 256, channels: 3, background: '#3b6ea5' },
  })
    .composite([
      {
        input: Buffer.from(
          '<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256"><circle cx="128" cy="100" r="52" fill="#f3d9c4"/><ellipse cx="128" cy="250" rx="96" ry="80" fill="#f3d9c4"/></svg>',
        ),
      },
    ])
    .png()
    .toBuffer();
  ok(
    await t.app.inject({
      method: 'PUT',
      url: '/api/v1/account/picture',
      headers: as({ 'content-type': 'image/png' }),
      payload: picture,
    }),
    200,
  );
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/organizations',
    headers: as(),
    payload: { name: 'Umbrella', slug: 'umbrella' },
  });
  ok(created, 201);
  organizationId = created.json().data.id;
  const colleague = await createPerson(t.ctx, 'jonas.berg@example.com');
  await insertMembership(t.ctx.database.db, {
    organizationId,
    identityId: colleague.identityId,
    role: 'billing',
    now: t.clock.now(),
  });
  const invitee = 'lena.holm@example.com';
  ok(
    await t.app.inject({
      method: 'POST',
      url: `/api/v1/organizations/${organizationId}/invitations`,
      headers: as(),
      payload: { identifierType: 'email', identifier: invitee, role: 'member' },
    }),
    201,
  );
  // The message goes out after the answer (the outbox's worker): waited for without expect.poll,
  // which only runs inside a test.
  for (const until = Date.now() + 10_000; messagesTo(t.config.dataDir, invitee).length === 0; ) {
    if (Date.now() > until) throw new Error(`no invitation for ${invitee}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const link = /\S+#\/invitations\/[A-Za-z0-9_-]+/.exec(messagesTo(t.config.dataDir, invitee)[0]?.text ?? '');
  if (!link) throw new Error(`no invitation link for ${invitee}`);
  invitation = link[0];
}

/** A fresh sign-in link for `email`, asked through the API (not the browser), from the outbox. */
async function signInLink(email: string): Promise<string> {
  const before = messagesTo(t.config.dataDir, email).length;
  const sent = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins/codes',
    payload: { identifierType: 'email', identifier: email },
  });
  expect(sent.statusCode, sent.body).toBe(201);
  await expect
    .poll(() => messagesTo(t.config.dataDir, email).length, { timeout: 10_000 })
    .toBeGreaterThan(before);
  const link = /\S+#\/sign-in\/link\/\S+/.exec(messagesTo(t.config.dataDir, email).at(-1)?.text ?? '');
  if (!link) throw new Error(`no link for ${email}`);
  return link[0];
}

let t: TestApp;
let browser: Browser;
let origin: string;
let person: Person;
let organizationId = '';
let invitation = '';

beforeAll(async () => {
  mkdirSync(GALLERY, { recursive: true });
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    env: {
      PUBLIC_ORIGIN: origin,
      ACCOUNT_UI: 'on',
      SIGN_IN_CODES: 'email',
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: 'reports',
          client_secret: `reports-${'s'.repeat(40)}`,
          client_name: 'Partner Reports',
          redirect_uris: ['https://reports.example/callback'],
          grant_types: ['authorization_code'],
          client_uri: 'https://reports.example/',
          policy_uri: 'https://reports.example/privacy',
          tos_uri: 'https://reports.example/terms',
        },
      ]),
      ORGANIZATION_ROLES: JSON.stringify([
        { name: 'billing', permissions: ['billing:read'], displayName: { en: 'Billing', fr: 'Facturation' } },
      ]),
    },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  person = await createPerson(t.ctx, 'mara.lindqvist@example.com');
  await furnish();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the hosted pages on every screen, theme and language', () => {
  for (const [language, locale] of Object.entries(LANGUAGES) as [keyof typeof LANGUAGES, string][]) {
    for (const theme of THEMES) {
      for (const [screen, viewport] of Object.entries(SCREENS)) {
        it(`${language}, ${theme}, ${screen}`, async () => {
          const context = await browser.newContext({ locale, colorScheme: theme, viewport });
          const page = await context.newPage();
          page.setDefaultTimeout(8000);
          // Signed in once, before the first page that needs it (the sign-in code's binding cookie
          // is no session).
          let signedIn = false;
          try {
            for (const p of PAGES) {
              // Signs the context in through the service's cookie hand-over, the way the page itself
              // does; the page is on the origin (the sign-in page came first) when it is called.
              if (p.signedIn && !signedIn) {
                await signInPage(page, person);
                signedIn = true;
              }
              // A fresh load each time (a change of hash alone would not ask for the cookie's session).
              await page.goto('about:blank');
              const route = typeof p.route === 'string' ? p.route : p.route();
              await page.goto(route.startsWith('/') ? `${origin}${route}` : `${origin}/account/${route}`);
              await page.getByRole('heading', { level: 1, name: p.heading[language] }).waitFor();
              await page.locator('.page-loading').waitFor({ state: 'hidden' });
              if (p.reach) await p.reach(page, language);
              if (p.step) await page.getByRole('heading', { level: 2, name: p.step[language] }).waitFor();
              expect(await page.evaluate(() => document.documentElement.lang)).toBe(language);
              await axeCheck(page, `${p.name} (${language}, ${theme}, ${screen})`);
              await page.screenshot({ path: join(GALLERY, `${p.name}.${language}.${theme}.${screen}.png`) });
            }
          } finally {
            await context.close();
          }
        });
      }
    }
  }
});
