import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, signInPage } from '../helpers/browser.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import {
  axeBoth,
  heading,
  openOrganizationPage,
  ownerWithOrganization,
} from '../helpers/organization-page.js';
import { join } from '../organizations/support.js';

/**
 * Issue 48's hosted "Directory" section in Chromium: an owner sees the SCIM base URL, creates a
 * token (shown once, in a dialog), the token answers GET /scim/v2/Users over real HTTP, the list
 * shows its last sync, the owner revokes it and it is refused (401). An admin does not see the
 * section. axe finds nothing, light and dark; French labels.
 */
let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let origin: string;
let owner: Person;
let admin: Person;
let orgId: string;
let token = '';
const pageErrors: string[] = [];
const clock = new ManualClock(new Date());

async function openOrganization(p: Page, who: Person): Promise<void> {
  await p.context().clearCookies();
  await p.goto('about:blank');
  await openOrganizationPage(p, { origin, orgId, name: 'Northwind' }, who);
}

function scimUsers(bearer: string): Promise<Response> {
  return fetch(`${origin}/scim/v2/Users`, { headers: { authorization: `Bearer ${bearer}` } });
}

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({ clock, env: { ACCOUNT_UI: 'on', PUBLIC_ORIGIN: origin } });
  await t.app.listen({ host: '127.0.0.1', port });
  ({ owner, orgId } = await ownerWithOrganization(t, 'Northwind'));
  admin = await createPerson(t.ctx);
  await join(t, orgId, admin.identityId, 'admin');
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the Directory section of an organization’s page', () => {
  it('an owner sees the SCIM base URL and creates a token, shown once in a dialog', async () => {
    await openOrganization(page, owner);
    const directory = page.locator('#org-directory');
    await directory.getByRole('heading', { name: 'Directory (SCIM)' }).waitFor();
    expect(await directory.getByRole('textbox', { name: 'SCIM base URL' }).inputValue()).toBe(
      `${origin}/scim/v2`,
    );
    await directory.getByRole('button', { name: 'Copy SCIM base URL' }).waitFor();
    await directory.getByText('No token yet.').waitFor();
    await axeBoth(page, 'organization directory, no token');
    await directory.getByLabel('Name', { exact: true }).fill('Okta');
    await directory.getByRole('button', { name: 'Create token' }).click();
    const dialog = page.getByRole('dialog', { name: 'Your new token: Okta' });
    await dialog.waitFor();
    await dialog.getByText('You will not see it again').waitFor();
    token = await dialog.getByRole('textbox', { name: 'SCIM token' }).inputValue();
    expect(token).toMatch(/^scim_/);
    await dialog.getByRole('button', { name: 'Copy SCIM token' }).waitFor();
    await axeBoth(page, 'organization directory, new token dialog');
    await dialog.getByRole('button', { name: 'I have copied it' }).click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await directory.getByText('Okta was created.').waitFor();
    const row = directory.locator('#scim-token-list li').first();
    expect(await row.locator('.identifier').textContent()).toBe('Okta');
    expect(await row.locator('.token-meta').textContent()).toMatch(/· last sync never$/);
    // Never shown again: not in the page once the dialog is closed.
    expect(await page.content()).not.toContain(token);
  });

  it('the token answers GET /scim/v2/Users, and the list shows its last sync', async () => {
    const res = await scimUsers(token);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { schemas: string[] }).schemas).toEqual([
      'urn:ietf:params:scim:api:messages:2.0:ListResponse',
    ]);
    await page.reload();
    await heading(page, 'Northwind');
    const meta = page.locator('#scim-token-list li .token-meta').first();
    await expect.poll(() => meta.textContent()).not.toMatch(/last sync never$/);
    expect(await meta.textContent()).toMatch(/· last sync \S/);
    await axeBoth(page, 'organization directory, a token used');
  });

  it('the owner revokes it after confirming; the token is refused (401)', async () => {
    const directory = page.locator('#org-directory');
    await directory.getByRole('button', { name: 'Revoke Okta' }).click();
    await directory.getByText('Revoke Okta?').waitFor();
    await directory.getByRole('button', { name: 'Revoke', exact: true }).click();
    await directory.getByText('Okta was revoked.').waitFor();
    await directory.locator('#scim-token-list li .token-revoked').waitFor();
    expect(await directory.getByRole('button', { name: 'Revoke Okta' }).count()).toBe(0);
    const res = await scimUsers(token);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    await axeBoth(page, 'organization directory, token revoked');
  });

  it('an admin (not an owner) does not see the section', async () => {
    await openOrganization(page, admin);
    await page.locator('#org-sso').waitFor();
    expect(await page.locator('#org-directory').count()).toBe(0);
  });

  it('in French: the section’s labels', async () => {
    const fr = await browser.newContext({ locale: 'fr-FR' });
    try {
      const p = await fr.newPage();
      p.setDefaultTimeout(10_000);
      p.on('pageerror', (e) => pageErrors.push(String(e)));
      await p.goto(`${origin}/account/#/sign-in`);
      await signInPage(p, { email: owner.email, password: owner.password });
      await p.goto('about:blank');
      await p.goto(`${origin}/account/#/organizations/${orgId}`);
      await heading(p, 'Northwind');
      const directory = p.locator('#org-directory');
      await directory.getByRole('heading', { name: 'Annuaire (SCIM)' }).waitFor();
      await directory.getByRole('textbox', { name: 'URL de base SCIM' }).waitFor();
      await directory.getByRole('button', { name: 'Créer le jeton' }).waitFor();
      await directory.getByText(/Révoqué le/).waitFor();
      await axeBoth(p, 'organization directory, French');
    } finally {
      await fr.close();
    }
  });

  it('no page error', () => {
    expect(pageErrors).toEqual([]);
  });
});
