import { sql } from 'kysely';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSessionCookieName } from '../../src/features/sessions/browser-session.js';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeAllCombinations, axeCheck, launchChromium, signInPage } from '../helpers/browser.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { createOrganization, join } from '../organizations/support.js';

/*
 * Delete my account (#/security/delete) and "Sign out of all other devices" (#/devices) in
 * Chromium: the last owner of an organization with members is refused in words, a typo too, and
 * nothing is deleted; a deletion ends on the sign-in page saying so, the cookie gone; another
 * device is signed out from this one (two browser contexts). Codes and the deletion's notice
 * arrive in the development outbox. One app and one browser; axe checks every new state.
 */
let t: TestApp;
let browser: Browser;
let origin: string;
const contexts: BrowserContext[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  // The page keeps an elevation until its expiry by the browser's clock: the service's starts now.
  t = await createTestApp({
    clock: new ManualClock(new Date()),
    env: { PUBLIC_ORIGIN: origin, ACCOUNT_UI: 'on', SECURITY_NOTICES: 'on' },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** A page of a new browser context, signed in as `person` through the hosted cookie. */
async function signedInPage(
  person: Person,
  locale = 'en-US',
): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 }, locale });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${origin}/account/`);
  await signInPage(page, { refreshToken: (await signIn(t.app, person)).refreshToken });
  await page.reload();
  return { page, context };
}

const heading = (page: Page, text: string) =>
  page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();

/** From the Security overview to the deletion page. */
async function openDeletion(page: Page): Promise<void> {
  await page.goto(`${origin}/account/#/security`);
  await heading(page, 'Security');
  await page.getByRole('link', { name: 'Delete your account…' }).click();
  await heading(page, 'Delete your account');
  expect(page.url()).toBe(`${origin}/account/#/security/delete`);
}

/** Answers the step-up box with the `count`-th code mailed to `to`. */
async function stepUp(page: Page, to: string, count: number): Promise<void> {
  const box = page.locator('.stepup');
  await box.getByLabel('Code').fill(await waitForCode(t.config.dataDir, to, count, 10_000));
  await box.getByRole('button', { name: 'Confirm' }).click();
}

const erased = async (identityId: string) =>
  (
    await sql<{
      erased: boolean;
    }>`SELECT erased_at IS NOT NULL AS erased FROM identities WHERE id = ${identityId}`.execute(
      t.ctx.database.db,
    )
  ).rows[0].erased;

describe('Delete my account', () => {
  it('the last owner of an organization with members is refused in words; a typo too; nothing is deleted', async () => {
    const owner = await createPerson(t.ctx, 'owner.leaving@example.com');
    const colleague = await createPerson(t.ctx);
    const org = await createOrganization(t, (await signIn(t.app, owner)).accessToken);
    await join(t, org.id, colleague.identityId, 'member');
    const { page } = await signedInPage(owner);
    await openDeletion(page);
    const input = page.getByLabel(`To confirm, type ${owner.email}`);
    await input.waitFor();
    await axeCheck(page, 'delete account: the form');

    await input.fill(owner.email);
    await page.getByRole('button', { name: 'Delete my account' }).click();
    // The step-up first: asked right there.
    await page.locator('.stepup').waitFor();
    await axeCheck(page, 'delete account: the step-up');
    await stepUp(page, owner.email, 1);
    const alert = page.getByRole('alert').filter({ hasText: 'last owner' });
    await alert.waitFor();
    expect(await alert.innerText()).toContain(
      'You are the last owner of an organization that has other members.',
    );
    await axeCheck(page, 'delete account: refused as last owner');

    // A typo: the held elevation is used again, the refusal says what to do.
    await input.fill(`x${owner.email}`);
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.getByRole('alert').filter({ hasText: 'type it exactly as shown' }).waitFor();
    await axeCheck(page, 'delete account: a typo');
    expect(await erased(owner.identityId)).toBe(false);
    // Still signed in.
    await page.goto(`${origin}/account/#/security`);
    await heading(page, 'Security');
  });

  it('deletes the account: the sign-in page says so, the cookie is gone, the notice is sent', async () => {
    const leaving = await createPerson(t.ctx, 'leaving@example.com');
    const { page, context } = await signedInPage(leaving);
    const cookie = browserSessionCookieName(origin);
    expect((await context.cookies()).map((c) => c.name)).toContain(cookie);
    await openDeletion(page);
    await page.getByLabel(`To confirm, type ${leaving.email}`).fill(leaving.email.toUpperCase());
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await stepUp(page, leaving.email, 1);
    await heading(page, 'Sign in');
    const notice = page.getByRole('status').filter({ hasText: 'Your account was deleted.' });
    await notice.waitFor();
    await axeCheck(page, 'sign-in after a deletion');
    expect((await context.cookies()).map((c) => c.name)).not.toContain(cookie);
    expect(await erased(leaving.identityId)).toBe(true);
    // The outbox keeps what left: the deletion's notice among the person's messages.
    await t.ctx.securityNotices.idle();
    expect(messagesTo(t.config.dataDir, leaving.email).map((m) => m.subject)).toContain(
      'Your account was deleted',
    );
    // A reload stays signed out.
    await page.reload();
    await heading(page, 'Sign in');
  });

  it('in French, the page and its refusal speak French, and so does the devices page', async () => {
    const owner = await createPerson(t.ctx, 'proprietaire@example.com');
    const colleague = await createPerson(t.ctx);
    const org = await createOrganization(t, (await signIn(t.app, owner)).accessToken);
    await join(t, org.id, colleague.identityId, 'member');
    const { page } = await signedInPage(owner, 'fr-FR');
    await page.goto(`${origin}/account/#/security/delete`);
    await heading(page, 'Supprimer votre compte');
    await page.getByLabel(`Pour confirmer, saisissez ${owner.email}`).fill(owner.email);
    await page.getByRole('button', { name: 'Supprimer mon compte' }).click();
    await page.locator('.stepup').waitFor();
    await page.locator('.stepup input').fill(await waitForCode(t.config.dataDir, owner.email, 1, 10_000));
    await page.locator('.stepup button[type="submit"]').click();
    await page.getByRole('alert').filter({ hasText: 'dernier propriétaire' }).waitFor();
    await axeCheck(page, 'supprimer le compte : refusé');
    // The devices page's new card, in French too.
    await page.goto(`${origin}/account/#/devices`);
    await heading(page, 'Appareils');
    const others = page.locator('#sign-out-others');
    await others.getByRole('heading', { name: 'Se déconnecter de tous les autres appareils' }).waitFor();
    // The session that made the organization is another device.
    await others.getByRole('button', { name: 'Se déconnecter de tous les autres appareils' }).click();
    await page.getByRole('group', { name: 'Se déconnecter de tous les autres appareils ?' }).waitFor();
    await axeAllCombinations(page, 'appareils : la question');
  });
});

describe('Sign out of all other devices', () => {
  it('asks first, then signs the other browser out; this one stays signed in', async () => {
    const person = await createPerson(t.ctx, 'two.devices@example.com');
    const here = await signedInPage(person);
    const there = await signedInPage(person);
    await here.page.goto(`${origin}/account/#/devices`);
    await heading(here.page, 'Devices');
    const items = here.page.locator('#sessions > li');
    // Two browser sessions, and the one signIn() made for each hand-over is handed over (ended).
    await expect.poll(() => items.count()).toBe(2);
    const open = here.page.getByRole('button', { name: 'Sign out of all other devices' });
    await open.click();
    const question = here.page.getByRole('group', { name: 'Sign out of all other devices?' });
    await question.waitFor();
    // Issue 46's proof: the question in both themes and at both sizes.
    await axeAllCombinations(here.page, 'devices: sign out of others, the question');
    await question.waitFor();
    await question.getByRole('button', { name: 'Sign out other devices' }).click();
    await here.page.getByRole('status').filter({ hasText: 'Signed out of all other devices.' }).waitFor();
    expect(await items.count()).toBe(1);
    await axeCheck(here.page, 'devices: others signed out');

    // The other browser is signed out at its next request; this one is not.
    await there.page.reload();
    await heading(there.page, 'Sign in');
    await here.page.reload();
    await heading(here.page, 'Devices');
    await expect.poll(() => items.count()).toBe(1);
    expect(await here.page.locator('#sign-out-others').innerText()).toContain(
      'No other device is signed in.',
    );
    expect(pageErrors).toEqual([]);
  });
});
