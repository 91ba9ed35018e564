import type { Page } from 'playwright-core';
import { createOrganization } from '../organizations/support.js';
import type { TestApp } from './app.js';
import { axeCheck, signInPage } from './browser.js';
import { createPerson, type Person, signIn } from './identities.js';

/**
 * What the browser suites of an organization's page (test/e2e/directory, test/e2e/sso) share: an
 * owner with an organization, that owner signed in on the hosted pages and looking at it, and
 * the page's checks (its level-1 heading, axe in both colour schemes).
 */

/** A new person owning a new organization named `name`. */
export async function ownerWithOrganization(
  t: TestApp,
  name: string,
): Promise<{ owner: Person; orgId: string }> {
  const owner = await createPerson(t.ctx);
  const org = await createOrganization(t, (await signIn(t.app, owner)).accessToken, name);
  return { owner, orgId: org.id };
}

/** Waits for the page's level-1 heading. */
export async function heading(p: Page, text: string | RegExp): Promise<void> {
  await p.getByRole('heading', { level: 1, name: text }).waitFor();
}

/** axe finds nothing in light and in dark; the page is left light. */
export async function axeBoth(p: Page, name: string): Promise<void> {
  await p.emulateMedia({ colorScheme: 'light' });
  await axeCheck(p, `${name} (light)`);
  await p.emulateMedia({ colorScheme: 'dark' });
  await axeCheck(p, `${name} (dark)`);
  await p.emulateMedia({ colorScheme: 'light' });
}

/** Signs `who` in on the hosted sign-in and opens the organization's page (its heading `name`). */
export async function openOrganizationPage(
  p: Page,
  where: { origin: string; orgId: string; name: string },
  who: Person,
): Promise<void> {
  await p.goto(`${where.origin}/account/#/sign-in`);
  await signInPage(p, { email: who.email, password: who.password });
  // A new document (a hash change alone would be drawn signed out first).
  await p.goto('about:blank');
  await p.goto(`${where.origin}/account/#/organizations/${where.orgId}`);
  await heading(p, where.name);
}
