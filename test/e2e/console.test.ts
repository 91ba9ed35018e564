import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { axeCheck } from '../helpers/browser.js';
import { type ConsoleFixture, startConsole } from '../helpers/console.js';
import { bearer, createPerson, type Person } from '../helpers/identities.js';
import type { OidcFixture } from '../helpers/oidc.js';
import type { Candidate } from '../helpers/operators.js';

/*
 * The operators' console in a real browser (docs/admin.md, "The console"): the admin listener on a
 * port of its own, the service's provider on another; an owner and a support operator each sign in
 * with a password and an authenticator code, through the console's own sign-in, and walk their
 * pages. axe on every page in light and dark.
 */

let f: OidcFixture;
let browser: Browser;
let consoleOrigin: string;
let customer: Person;

let fx: ConsoleFixture;
const admin = () => fx.admin();
const operator = (role: 'owner' | 'support' | 'auditor') => fx.operator(role);
const signIn = (c: Candidate, locale?: string) => fx.signIn(c, locale);

beforeAll(async () => {
  fx = await startConsole();
  ({ f, browser, consoleOrigin } = fx);
  customer = await createPerson(f.t.ctx, 'locked.out@example.com');
}, 60_000);
afterAll(async () => {
  await fx?.close();
});

/** A password sign-in of the person from a desktop Chrome at `ip`: a live session the console lists. */
async function sessionFrom(p: Person, ip: string): Promise<void> {
  const r = await f.t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    remoteAddress: ip,
    headers: {
      'user-agent':
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
    },
    payload: { identifierType: 'email', identifier: p.email, password: p.password },
  });
  expect(r.statusCode, r.body).toBe(201);
}

/** The screenshots of docs/admin.md ("The console's pages"). */
const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '../../docs/ui/console');

/** axe on the page as it is, in light and in dark; with `shot`, its screenshot in both for the docs. */
async function axeBoth(page: Page, name: string, shot?: string): Promise<void> {
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await axeCheck(page, `${name} (${colorScheme})`);
    if (shot) {
      await mkdir(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, `${shot}.${colorScheme}.png`), fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

describe("the operators' console", () => {
  it('a signed-out visitor sees only the sign-in, in English and French, axe-clean', async () => {
    for (const [locale, heading] of [
      ['en-GB', 'Sign in to the console'],
      ['fr-FR', 'Se connecter à la console'],
    ]) {
      const context = await browser.newContext({ locale });
      const page = await context.newPage();
      const res = await page.goto(`${consoleOrigin}/console/`);
      expect(res?.headers()['content-security-policy']).toContain("default-src 'none'");
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(heading);
      expect(await page.locator('#nav').isHidden()).toBe(true);
      await axeBoth(page, `signed out ${locale}`, locale === 'en-GB' ? 'signed-out' : undefined);
      await context.close();
    }
    // The public port serves none of it.
    expect((await fetch(`${f.origin}/console/`)).status).toBe(404);
  });

  it('an owner signs in, finds the person, acts with a confirmation naming them, erases with the identifier typed again', async () => {
    const owner = await operator('owner');
    const { context, page } = await signIn(owner);
    const header = page.locator('#operator');
    await expect.poll(() => header.textContent()).toContain(owner.person.identityId);
    expect(await header.textContent()).toContain('Role: Owner');
    await axeBoth(page, 'search (owner)');

    // Keyboard first: the search field has the focus; type and press Enter.
    await page.keyboard.type('locked.out@example.com');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 2, name: 'Results' }).waitFor();
    const link = page.getByRole('link', { name: customer.email });
    expect(await link.count()).toBe(1);
    await axeBoth(page, 'search results', 'search');
    // A live session of the person's: the page lists it with its device, address and activity.
    await sessionFrom(customer, '203.0.113.7');
    await link.click();
    await page.getByRole('heading', { level: 1, name: customer.email }).waitFor();
    const sessions = page.getByRole('table', { name: 'Sessions' });
    expect(await sessions.textContent()).toContain('203.0.113.7');
    expect(await sessions.textContent()).toContain('Chrome');
    expect(await sessions.locator('th').allTextContents()).toEqual([
      'Device',
      'Address',
      'Method',
      'Created',
      'Last active',
    ]);
    expect(await page.getByText('Member of no organization.').count()).toBe(1);
    expect(await page.getByText('No connected app.').count()).toBe(1);
    for (const section of [
      'Identifiers',
      'Sign-in methods',
      'Second factors',
      'Sessions',
      'Organizations',
      'Connected apps',
      'Audit trail of this person',
    ])
      expect(await page.getByRole('heading', { level: 2, name: section }).count(), section).toBe(1);
    await axeBoth(page, "a person's page (owner)", 'person');

    // End every session: a dialog naming the person; Cancel does nothing, Confirm acts.
    await page.getByRole('button', { name: 'End every session' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain(customer.email);
    await axeBoth(page, 'confirmation', 'confirmation');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    const detail = await admin().inject({
      method: 'GET',
      url: `/admin/v1/identities/${customer.identityId}`,
      headers: bearer(ADMIN_KEY),
    });
    expect(detail.json().data.disabledAt).not.toBeNull();
    // The acts are in the person's audit trail, by the operator, each record verified.
    await expect
      .poll(() => page.locator('table').last().textContent())
      .toContain(`operator:${owner.person.identityId}`);
    expect(await page.locator('table').last().textContent()).not.toContain('Does not verify');

    // Erase: a wrong identifier is refused and nothing happens; the right one erases.
    await page.getByRole('button', { name: 'Erase' }).click();
    const erase = page.getByRole('dialog');
    await erase
      .getByLabel('Type one of their verified identifiers to confirm')
      .fill('someone.else@example.com');
    await erase.getByRole('button', { name: 'Confirm' }).click();
    await expect
      .poll(() => erase.getByRole('alert').textContent())
      .toBe('That is not one of their verified identifiers.');
    await axeBoth(page, 'erasure refused', 'erasure');
    await erase.getByLabel('Type one of their verified identifiers to confirm').fill(customer.email);
    await erase.getByRole('button', { name: 'Confirm' }).click();
    await page.getByText('Erased', { exact: true }).waitFor();

    // OpenID clients: register one, its secret shown once; rotate it, a new one shown once.
    await page.getByRole('link', { name: 'OpenID clients' }).click();
    await page.getByRole('heading', { level: 1, name: 'OpenID clients' }).waitFor();
    expect(await page.getByRole('cell', { name: 'console', exact: true }).count()).toBe(1);
    await axeBoth(page, 'OpenID clients (owner)', 'clients');
    await page.getByLabel('Client id').fill('reports');
    await page.getByLabel('Name', { exact: true }).fill('Reports');
    await page.getByLabel('Redirect URI').fill('https://reports.example.com/callback');
    await page.getByRole('button', { name: 'Register' }).click();
    const shown = page.getByRole('dialog');
    await shown.getByRole('heading', { name: 'The secret of reports' }).waitFor();
    const secret = await shown.locator('#client-secret').textContent();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await axeBoth(page, 'a secret shown once');
    await shown.getByRole('button', { name: 'Confirm' }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.locator('main').textContent()).not.toContain(secret);
    await page.getByRole('button', { name: 'Rotate the secret (reports)' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('dialog').getByRole('heading', { name: 'The secret of reports' }).waitFor();
    const rotated = await page.getByRole('dialog').locator('#client-secret').textContent();
    expect(rotated).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated).not.toBe(secret);
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();

    // The audit trail page: the chain's verification.
    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByText('Every record shown verifies.').waitFor();
    await axeBoth(page, 'audit trail', 'audit');

    // Sign out: back to the sign-in, and the session is gone.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to the console' }).waitFor();
    const after = await page.evaluate(
      async () => (await fetch('/console/session', { method: 'POST' })).status,
    );
    expect(after).toBe(401);
    await context.close();
  });

  it('a support operator unlocks and ends sessions, finds no erase control, and the API refuses erasure', async () => {
    const person = await createPerson(f.t.ctx, 'needs.help@example.com');
    const support = await operator('support');
    const { context, page } = await signIn(support, 'fr-FR');
    await expect.poll(() => page.locator('#operator').textContent()).toContain('Rôle : Assistance');
    await axeBoth(page, 'recherche (assistance)');
    // Found through their organization: its id opens its page, its members link to their pages.
    const org = await admin().inject({
      method: 'POST',
      url: '/admin/v1/organizations',
      headers: bearer(ADMIN_KEY),
      payload: { name: 'Acme', slug: 'acme-console', ownerIdentityId: person.identityId },
    });
    expect(org.statusCode, org.body).toBe(201);
    await page
      .getByLabel('Adresse e-mail, numéro de téléphone, identifiant ou identifiant d’organisation')
      .fill(org.json().data.id);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Organisation Acme' }).waitFor();
    await axeBoth(page, 'organisation (assistance)');
    await page.locator('#nav').getByRole('link', { name: 'Organisations' }).click();
    await page.getByRole('heading', { level: 1, name: 'Organisations' }).waitFor();
    await axeBoth(page, 'organisations (assistance)', 'organizations.fr');
    await page.getByRole('link', { name: 'Acme' }).click();
    await page.getByRole('heading', { level: 1, name: 'Organisation Acme' }).waitFor();
    await sessionFrom(person, '198.51.100.4');
    await page.getByRole('link', { name: person.email }).click();
    await page.getByRole('heading', { level: 1, name: person.email }).waitFor();
    const sessions = page.getByRole('table', { name: 'Sessions' });
    expect(await sessions.textContent()).toContain('198.51.100.4');
    expect(await sessions.locator('th').allTextContents()).toEqual([
      'Appareil',
      'Adresse',
      'Méthode',
      'Créé',
      'Dernière activité',
    ]);
    // The organization they own, linking to its page.
    const orgs = page.getByRole('table', { name: 'Organisations' });
    expect(await orgs.getByRole('link', { name: 'Acme' }).count()).toBe(1);
    expect(await orgs.textContent()).toContain('owner');
    expect(await page.getByRole('heading', { level: 2, name: 'Applications connectées' }).count()).toBe(1);
    expect(await page.getByText('Aucune application connectée.').count()).toBe(1);
    await axeBoth(page, 'fiche (assistance)', 'person-support.fr');
    // On a phone the read pages fit the screen: tables scroll in their own box, the page does not.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await page.getByRole('link', { name: 'Journal d’audit' }).isVisible()).toBe(true);
    await axeBoth(page, 'fiche sur téléphone', 'phone-person.fr');
    await page.setViewportSize({ width: 1280, height: 800 });
    const acts = await page.locator('.acts button').allTextContents();
    expect(acts).toEqual(['Lever le verrouillage', 'Mettre fin à toutes les sessions']);
    expect(await page.locator('[data-act=erase], [data-act=disable]').count()).toBe(0);

    await page.getByRole('button', { name: 'Lever le verrouillage' }).click();
    expect(await page.getByRole('dialog').textContent()).toContain(person.email);
    await page.getByRole('dialog').getByRole('button', { name: 'Confirmer' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });

    // Called directly with the console's own token, the API refuses the erasure.
    const refused = await page.evaluate(async (id) => {
      const s = await (await fetch('/console/session', { method: 'POST' })).json();
      const r = await fetch(`/admin/v1/identities/${id}/erasures`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.data.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ identifier: 'needs.help@example.com' }),
      });
      return { status: r.status, code: (await r.json()).code };
    }, person.identityId);
    expect(refused).toEqual({ status: 403, code: 'admin.forbidden' });
    const still = await admin().inject({
      method: 'GET',
      url: `/admin/v1/identities/${person.identityId}`,
      headers: bearer(ADMIN_KEY),
    });
    expect(still.json().data.erasedAt).toBeNull();

    // OpenID clients: read only.
    await page.getByRole('link', { name: 'Clients OpenID' }).click();
    await page.getByRole('heading', { level: 1, name: 'Clients OpenID' }).waitFor();
    expect(await page.locator('main button, main form').count()).toBe(0);
    await axeBoth(page, 'clients (assistance)');

    await page.getByRole('link', { name: 'Journal d’audit' }).click();
    await page.getByText('Chaque enregistrement affiché se vérifie.').waitFor();
    await axeBoth(page, 'journal (assistance)');
    await context.close();
  });

  it('an erasure after a stale sign-in sends the owner through the sign-in again (step-up), erasing nothing', async () => {
    const person = await createPerson(f.t.ctx, 'stale.erasure@example.com');
    const owner = await operator('owner');
    const { context, page } = await signIn(owner);
    await page.goto(`${consoleOrigin}/console/#/people/${person.identityId}`);
    await page.getByRole('heading', { level: 1, name: person.email }).waitFor();
    // Older than ELEVATION_TTL (300 s), younger than the access token and the idle timeout.
    f.t.clock.advance(301);
    await page.getByRole('button', { name: 'Erase' }).click();
    await page
      .getByRole('dialog')
      .getByLabel('Type one of their verified identifiers to confirm')
      .fill(person.email);
    const fresh = page.waitForRequest((r) => r.url() === `${consoleOrigin}/console/sign-in?fresh=1`);
    const provider = page.waitForRequest((r) => r.url().startsWith(`${f.origin}/oidc/auth?`));
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await fresh;
    const auth = new URL((await provider).url());
    expect(auth.searchParams.get('prompt')).toBe('login');
    expect(auth.searchParams.get('max_age')).toBe('0');
    const still = await admin().inject({
      method: 'GET',
      url: `/admin/v1/identities/${person.identityId}`,
      headers: bearer(ADMIN_KEY),
    });
    expect(still.json().data.erasedAt).toBeNull();
    await context.close();
  });

  it('an auditor sees the audit trail and nothing else', async () => {
    const auditor = await operator('auditor');
    const { context, page } = await signIn(auditor);
    await page.getByText('Every record shown verifies.').waitFor();
    expect(await page.locator('#nav a').allTextContents()).toEqual(['Audit trail']);
    expect(await page.locator('#operator').textContent()).toContain('Role: Auditor');
    await axeBoth(page, 'audit trail (auditor)');
    // A person's page asked by its address: the audit trail instead (the role reads no identity).
    await page.goto(`${consoleOrigin}/console/#/people/${customer.identityId}`);
    await page.waitForURL(`${consoleOrigin}/console/#/audit`);
    await context.close();
  });
});
