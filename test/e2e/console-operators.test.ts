import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { axeAllCombinations } from '../helpers/browser.js';
import { type ConsoleFixture, startConsole } from '../helpers/console.js';
import { bearer, createPerson } from '../helpers/identities.js';
import type { OidcFixture } from '../helpers/oidc.js';

/*
 * The console's operators page and an organization's SCIM tokens in a real browser (docs/admin.md,
 * "The console's pages"): an owner grants a role to a person found by the search, changes it and
 * takes it away, each confirmed with the person named; the CONSOLE_OPERATORS entry and the owner's
 * own row have no control; an owner creates a SCIM token (shown once, copied) and revokes it with
 * the organization named. A support operator reads both pages in French without a control, and
 * the API refuses them their own promotion; an auditor has no operators page. axe on every page
 * and dialog in light and dark, desktop and phone.
 */

const FIXED = 'fixed.owner@example.com';

let f: OidcFixture;
let consoleOrigin: string;
let fx: ConsoleFixture;
const admin = () => fx.admin();

beforeAll(async () => {
  fx = await startConsole({ CONSOLE_OPERATORS: `owner:${FIXED}` });
  ({ f, consoleOrigin } = fx);
}, 60_000);
afterAll(async () => {
  await fx?.close();
});

async function adminCall(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) {
  return admin().inject({
    method,
    url: `/admin/v1${url}`,
    headers: bearer(ADMIN_KEY),
    ...(payload ? { payload } : {}),
  });
}

/** The role GET /admin/v1/operators gives `identityId`, undefined for none. */
async function roleOf(identityId: string): Promise<string | undefined> {
  const list = (await adminCall('GET', '/operators')).json().data as { identityId: string; role: string }[];
  return list.find((o) => o.identityId === identityId)?.role;
}

/** The screenshots of docs/admin.md ("The console's pages"). */
const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '../../docs/ui/console');

/** axe in every theme and size; with `shot`, the desktop screenshot in light and dark for the docs. */
async function axeEvery(page: Page, name: string, shot?: string): Promise<void> {
  await axeAllCombinations(page, name);
  if (!shot) return;
  await mkdir(SHOTS, { recursive: true });
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.screenshot({ path: join(SHOTS, `${shot}.${colorScheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** A read page on a phone: the tables scroll in their own box, the page does not. */
async function fitsAPhone(page: Page): Promise<void> {
  await page.setViewportSize({ width: 375, height: 812 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  await page.setViewportSize({ width: 1280, height: 800 });
}

const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor();

/** Confirms the open dialog, after checking it names what it acts on. */
async function confirm(page: Page, ...names: string[]): Promise<void> {
  const dialog = page.getByRole('dialog');
  for (const name of names) expect(await dialog.textContent()).toContain(name);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await dialog.waitFor({ state: 'detached' });
}

describe("the console's operators page", () => {
  it(
    'an owner grants, changes and revokes a role, each confirmed naming the person; fixed rows have no control',
    { timeout: 400_000 },
    async () => {
      const owner = await fx.operator('owner');
      const helper = await createPerson(f.t.ctx, 'new.helper@example.com');
      const { context, page } = await fx.signIn(owner);
      await page.getByRole('navigation').getByRole('link', { name: 'Operators' }).click();
      await heading(page, 'Operators');
      const list = page.getByRole('region', { name: 'Operators' });

      // The configured owner: set by the setting, fixed. The owner's own row: no control either.
      const fixed = list.getByRole('row', { name: new RegExp(FIXED) });
      expect(await fixed.textContent()).toContain('Set by CONSOLE_OPERATORS');
      expect(await fixed.textContent()).toContain('Fixed: CONSOLE_OPERATORS sets it');
      expect(await fixed.locator('button, select').count()).toBe(0);
      const mine = list.getByRole('row', { name: new RegExp(owner.person.email) });
      expect(await mine.textContent()).toContain('(you)');
      expect(await mine.textContent()).toContain('no operator changes their own role');
      expect(await mine.locator('button, select').count()).toBe(0);

      // Keyboard: the search field, type, Enter.
      await page.getByLabel('Find the person').focus();
      await page.keyboard.type(helper.email);
      await page.keyboard.press('Enter');
      const found = page.getByRole('region', { name: 'People found' });
      await found.getByRole('link', { name: helper.email }).waitFor();
      expect(await found.getByRole('row', { name: new RegExp(helper.email) }).textContent()).toContain(
        'None',
      );
      await page.getByLabel(`Role for ${helper.email}`, { exact: true }).selectOption('support');
      await page.getByRole('button', { name: `Grant the role to ${helper.email}` }).click();
      await axeEvery(page, 'grant confirmation');
      await confirm(page, helper.email, 'Support');
      await expect.poll(() => roleOf(helper.identityId)).toBe('support');
      await list.getByRole('link', { name: helper.email }).waitFor();

      // The role changed, then taken away, each confirmed with the person named.
      await page.getByLabel(`Role of ${helper.email}`, { exact: true }).selectOption('auditor');
      await page.getByRole('button', { name: `Change the role of ${helper.email}` }).click();
      await confirm(page, helper.email, 'Auditor');
      await expect.poll(() => roleOf(helper.identityId)).toBe('auditor');
      await expect
        .poll(() => list.getByRole('row', { name: new RegExp(helper.email) }).textContent())
        .toContain('Auditor');
      await axeEvery(page, 'operators (owner)', 'operators');
      await fitsAPhone(page);
      await page.getByRole('button', { name: `Revoke the role of ${helper.email}` }).click();
      await axeEvery(page, 'revoke confirmation');
      await confirm(page, helper.email);
      await expect.poll(() => roleOf(helper.identityId)).toBeUndefined();
      await expect.poll(() => list.getByRole('link', { name: helper.email }).count()).toBe(0);

      // A list drawn before another owner acted: the API's refusal is shown in the dialog, in words.
      expect(
        (await adminCall('PUT', `/operators/${helper.identityId}`, { role: 'support' })).statusCode,
      ).toBe(200);
      await page.reload();
      await list.getByRole('link', { name: helper.email }).waitFor();
      expect((await adminCall('DELETE', `/operators/${helper.identityId}`)).statusCode).toBe(204);
      await page.getByRole('button', { name: `Revoke the role of ${helper.email}` }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      await expect
        .poll(() => page.getByRole('dialog').getByRole('alert').textContent())
        .toBe('This person no longer has a console role.');
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

      // The owner finds themselves: no control there either, the refusal's reason instead.
      await page.getByLabel('Find the person').fill(owner.person.email);
      await page.getByRole('button', { name: 'Find', exact: true }).click();
      const self = found.getByRole('row', { name: new RegExp(owner.person.email) });
      await expect.poll(() => self.textContent()).toContain('no operator changes their own role');
      expect(await self.locator('button, select').count()).toBe(0);
      // And the API refuses it: no operator changes their own role (so none leaves no owner).
      const own = await page.evaluate(async (id) => {
        const s = await (await fetch('/console/session', { method: 'POST' })).json();
        const r = await fetch(`/admin/v1/operators/${id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${s.data.accessToken}` },
        });
        return { status: r.status, code: (await r.json()).code };
      }, owner.person.identityId);
      expect(own).toEqual({ status: 403, code: 'admin.operator_own_role' });
      expect(await roleOf(owner.person.identityId)).toBe('owner');

      // Every act audited with the operator as the actor.
      const trail = (await adminCall('GET', `/audit-records?identityId=${helper.identityId}`)).json()
        .data as {
        name: string;
        actor: string;
      }[];
      const mineActs = trail
        .filter((r) => r.actor === `operator:${owner.person.identityId}`)
        .map((r) => r.name);
      expect(mineActs).toEqual(expect.arrayContaining(['operator.role_granted', 'operator.role_revoked']));
      await context.close();
    },
  );

  it(
    'a support operator reads it in French without a control, and the API refuses their own promotion',
    { timeout: 300_000 },
    async () => {
      const support = await fx.operator('support');
      const { context, page } = await fx.signIn(support, 'fr-FR');
      await page.getByRole('navigation').getByRole('link', { name: 'Opérateurs' }).click();
      await heading(page, 'Opérateurs');
      expect(await page.locator('#operators-read-only').textContent()).toBe(
        'Votre rôle lit les opérateurs ; seul un propriétaire les modifie.',
      );
      const list = page.getByRole('region', { name: 'Opérateurs' });
      expect(await list.getByRole('row', { name: new RegExp(support.person.email) }).textContent()).toContain(
        'Assistance',
      );
      expect(await page.locator('#main button, #main select, #main form').count()).toBe(0);
      await axeEvery(page, 'opérateurs (assistance)');
      await fitsAPhone(page);

      // The page has no control; the API, called with the page's own token, refuses anyway.
      const raised = await page.evaluate(async (id) => {
        const s = await (await fetch('/console/session', { method: 'POST' })).json();
        const r = await fetch(`/admin/v1/operators/${id}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${s.data.accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ role: 'owner' }),
        });
        return { status: r.status, code: (await r.json()).code };
      }, support.person.identityId);
      expect(raised).toEqual({ status: 403, code: 'admin.forbidden' });
      expect(await roleOf(support.person.identityId)).toBe('support');
      await context.close();
    },
  );

  it('an auditor has no operators page: no link, and its address leads to the audit trail', async () => {
    const auditor = await fx.operator('auditor');
    const { context, page } = await fx.signIn(auditor);
    await heading(page, 'Audit trail');
    expect(await page.getByRole('navigation').getByRole('link', { name: 'Operators' }).count()).toBe(0);
    await page.goto(`${consoleOrigin}/console/#/operators`);
    await expect.poll(() => page.url()).toMatch(/#\/audit$/);
    await context.close();
  }, 120_000);
});

describe("an organization's SCIM tokens", () => {
  it(
    'an owner creates one, shown once with a copy, and revokes it with the organization named; support only reads',
    { timeout: 400_000 },
    async () => {
      const orgOwner = await createPerson(f.t.ctx, 'contoso.owner@example.com');
      const created = await adminCall('POST', '/organizations', {
        name: 'Contoso',
        slug: 'contoso',
        ownerIdentityId: orgOwner.identityId,
      });
      expect(created.statusCode, created.body).toBe(201);
      const orgId = created.json().data.id as string;

      const owner = await fx.operator('owner');
      const { context, page } = await fx.signIn(owner);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: consoleOrigin });
      await page.goto(`${consoleOrigin}/console/#/organizations/${orgId}`);
      await heading(page, 'Organization Contoso');
      expect(await page.locator('#scim-status').textContent()).toContain('No active SCIM token');

      await page.getByLabel('Name of the token').fill('Okta');
      await page.getByRole('button', { name: 'Create the token' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('heading', { name: 'The SCIM token Okta' }).waitFor();
      const token = (await dialog.locator('#scim-token').textContent()) ?? '';
      expect(token).toMatch(/^scim_/);
      await dialog.getByRole('button', { name: 'Copy the token' }).click();
      await expect.poll(() => dialog.getByRole('status').textContent()).toBe('Copied.');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
      await axeEvery(page, 'SCIM token shown once', 'scim-token');
      // The token works for the directory.
      const users = () => f.t.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: bearer(token) });
      expect((await users()).statusCode).toBe(200);
      await dialog.getByRole('button', { name: 'Done' }).click();
      await dialog.waitFor({ state: 'detached' });
      // Gone from the page once the dialog is closed: never shown again.
      expect(await page.locator('body').textContent()).not.toContain(token);
      expect(await page.locator('#scim-status').textContent()).toBe('1 active SCIM token.');
      await axeEvery(page, 'organization with a SCIM token (owner)', 'organization');

      await page.getByRole('button', { name: 'Revoke the token Okta' }).click();
      await axeEvery(page, 'SCIM token revocation');
      await confirm(page, 'Okta', 'Contoso');
      await expect.poll(() => page.locator('#scim-status').textContent()).toContain('No active SCIM token');
      expect((await users()).statusCode).toBe(401);
      expect(await page.getByRole('button', { name: 'Revoke the token Okta' }).count()).toBe(0);
      await context.close();

      // Support: the list, its revoked token, and no control.
      expect(
        (await adminCall('POST', `/organizations/${orgId}/scim-tokens`, { name: 'Entra ID' })).statusCode,
      ).toBe(201);
      const support = await fx.operator('support');
      const fr = await fx.signIn(support, 'fr-FR');
      await fr.page.goto(`${consoleOrigin}/console/#/organizations/${orgId}`);
      await heading(fr.page, 'Organisation Contoso');
      const scim = fr.page.getByRole('region', { name: 'Approvisionnement SCIM' });
      expect(await scim.textContent()).toContain('Okta');
      expect(await scim.textContent()).toContain('Entra ID');
      expect(await fr.page.locator('#scim-status').textContent()).toBe('1 jeton SCIM actif.');
      expect(await fr.page.locator('#main button, #main select, #main form').count()).toBe(0);
      await axeEvery(fr.page, 'organisation avec jetons SCIM (assistance)');
      await fitsAPhone(fr.page);
      await fr.context.close();
    },
  );
});
