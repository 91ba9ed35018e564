import type { Browser, BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { setLocale } from '../../ui/i18n.js';
import { t as account } from '../../ui/messages/account.js';
import { roleName, t } from '../../ui/messages/organizations.js';
import { t as security } from '../../ui/messages/security.js';
import { t as signUp } from '../../ui/messages/sign-up.js';
import { t as stepUpText } from '../../ui/messages/stepup.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeAllCombinations, axeCheck, launchChromium, signInPage } from '../helpers/browser.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { bodyOf, mailCode, mailCount, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { createOrganization, join } from '../organizations/support.js';

/*
 * Issue 28's journey in Chromium, on a desktop and on a phone: A creates an organization (the
 * slug suggested from the name), invites B by email (the mail read from a real SMTP sink), B opens
 * the link in a second browser context (the token leaves the address bar at once), creates an
 * account through the invitation and comes back to it, accepts, switches to the organization in
 * the frame's switcher (the phone's Menu) and sees the role "Member"; A makes B an admin and B's
 * next page shows "Admin". Then the refusals in the person's words (the link used twice), an
 * organization requiring a second factor sends B to Security → 2-step verification with the
 * reason, and once A removes B, B's next page no longer lists it. The page's calls after a switch
 * carry the access token the switch answered. axe-core checks every page state (no violation of
 * any impact); the pages' words come from the same catalogues the pages read.
 */
const SCREENS = { desktop: { width: 1280, height: 800 }, phone: { width: 375, height: 812 } } as const;
type Screen = keyof typeof SCREENS;

let t0: TestApp;
let smtp: SmtpSink;
let browser: Browser;
let origin: string;
const pageErrors: string[] = [];
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  setLocale({ locale: 'en', pseudo: false });
  smtp = await startSmtpSink();
  const port = await freePort();
  origin = `http://localhost:${port}`;
  // The page keeps an elevation until its expiry by the browser's clock: the service's starts now.
  t0 = await createTestApp({
    clock: new ManualClock(new Date()),
    env: {
      PUBLIC_ORIGIN: origin,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      ACCOUNT_UI: 'on',
      ORGANIZATION_ROLES: JSON.stringify([
        { name: 'billing', permissions: ['billing:read'], displayName: { en: 'Billing', fr: 'Facturation' } },
      ]),
    },
  });
  await t0.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await t0?.close();
  await smtp?.close();
});

async function open(screen: Screen): Promise<Page> {
  const context = await browser.newContext({ viewport: SCREENS[screen], locale: 'en-GB' });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  return page;
}

const h1 = (page: Page, name: string) => page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

/**
 * The switcher's button, behind the Menu on a phone. Each page drawn closes the Menu again (a
 * switch draws the page again), so it is opened until the button shows.
 */
async function switcher(page: Page, screen: Screen) {
  const toggle = page.locator('.org-switcher-toggle');
  for (let attempt = 0; ; attempt++) {
    if (screen === 'phone') {
      const menu = page.locator('.menu-toggle');
      if ((await menu.getAttribute('aria-expanded')) !== 'true') await menu.click();
    }
    try {
      await toggle.waitFor({ timeout: 1000 });
      return toggle;
    } catch (error) {
      if (attempt >= 10) throw error;
    }
  }
}

/** The acceptance link in the newest invitation mailed to `to` (quoted-printable soft breaks joined). */
async function invitationLink(to: string, count: number): Promise<string> {
  const until = Date.now() + 10_000;
  for (;;) {
    const mine = smtp.received.filter((m) => m.to.includes(to));
    if (mine.length >= count) {
      const body = bodyOf(mine[count - 1].raw).replace(/=\r?\n/g, '');
      const link = /https?:\/\/\S+\/account\/#\/invitations\/[A-Za-z0-9_-]+/.exec(body)?.[0];
      if (!link) throw new Error(`no invitation link in the mail to ${to}`);
      return link;
    }
    if (Date.now() > until) throw new Error(`no mail #${count} for ${to}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A browser signed in as this person at the account pages, on the organizations list. The page is
 * loaded again after signing in, so it finds the session in the cookie.
 */
async function atOrganizations(screen: Screen, person: Person) {
  const page = await open(screen);
  await page.goto(`${origin}/account/`);
  await signInPage(page, person);
  await page.reload();
  await h1(page, account('title'));
  await page.goto(`${origin}/account/#/organizations`);
  await h1(page, t('list.title'));
  return page;
}

describe('organizations in the hosted pages', () => {
  for (const screen of Object.keys(SCREENS) as Screen[]) {
    it(`${screen}: create, invite by email, accept after signing up, switch, see the role change`, async () => {
      const orgName = `Acme ${screen}`;
      const slug = `acme-${screen}`;
      const owner: Person = await createPerson(t0.ctx, `ada-${screen}@example.com`);
      const invitee = `bob-${screen}@example.com`;
      const inviteePassword = `lantern-orchard-${screen}-river-41`;

      // A signs in and creates the organization; the slug follows the name.
      const a = await atOrganizations(screen, owner);
      expect(await a.locator('#organizations').innerText()).toBe(t('list.none'));
      // Personal, until an organization is chosen.
      expect(await (await switcher(a, screen)).innerText()).toBe(
        t('switcher.label', { name: t('switcher.personal') }),
      );
      await axeCheck(a, `${screen}: organizations, none yet`);
      await a.getByLabel(t('create.name'), { exact: true }).fill(orgName);
      expect(await a.getByLabel(t('create.slug'), { exact: true }).inputValue()).toBe(slug);
      await button(a, t('create.submit')).click();
      await h1(a, orgName);
      // The new organization is the one A now acts in.
      await a.getByText(t('create.createdActive', { name: orgName })).waitFor();
      await expect
        .poll(async () => (await switcher(a, screen)).innerText())
        .toBe(t('switcher.label', { name: orgName }));
      expect(await a.locator('#org-role').innerText()).toBe(t('org.yourRole', { role: roleName('owner') }));
      // The sole owner is not offered "Leave": the way out is said instead.
      await a.locator('#member-list .sole-owner').waitFor();
      expect(await a.locator('#member-list').innerText()).toContain(t('members.soleOwner'));
      expect(await button(a, t('members.leave')).count()).toBe(0);
      await axeCheck(a, `${screen}: organization page (owner)`);

      // A invites B by email as a member.
      const invite = a.locator('#invitations');
      await invite.locator('input[name="identifier"]').fill(invitee);
      expect(await invite.getByLabel(t('invite.role'), { exact: true }).inputValue()).toBe('member');
      await invite.getByRole('button', { name: t('invite.submit'), exact: true }).click();
      await a.locator('#invitations .notice').waitFor();
      expect(await a.locator('#invitation-list li').count()).toBe(1);
      expect(await a.locator('#invitation-list').innerText()).toContain(roleName('member'));
      // The owner sees the address as invited, not masked: they know who is who.
      expect(await a.locator('#invitation-list').innerText()).toContain(invitee);
      await axeCheck(a, `${screen}: invitation sent`);

      // B opens the link in another browser: the token leaves the address bar at once.
      const link = await invitationLink(invitee, 1);
      expect(link.startsWith(`${origin}/account/#/invitations/`)).toBe(true);
      const token = link.slice(link.lastIndexOf('/') + 1);
      const b = await open(screen);
      await b.goto(link);
      await h1(b, t('invitation.title'));
      expect(b.url()).toBe(`${origin}/account/#/invitation`);
      expect(await b.evaluate(() => sessionStorage.getItem('account-ui.invitation'))).toContain(token);
      await b
        .getByRole('heading', {
          level: 2,
          name: t('invitation.whatFrom', { inviter: owner.email, org: orgName, role: roleName('member') }),
        })
        .waitFor();
      // On the sign-in page's card, centred (issue 46): the screen's width less its margins on a phone.
      const card = await b.locator('main > .sign-in-card').boundingBox();
      const width = SCREENS[screen].width;
      expect(card?.width ?? 0).toBeLessThanOrEqual(440);
      expect(Math.abs((card?.x ?? 0) + (card?.width ?? 0) / 2 - width / 2)).toBeLessThan(20);
      await axeCheck(b, `${screen}: invitation, signed out`);

      // B creates an account through it, confirms the address, and comes back to the invitation.
      await b.getByRole('link', { name: t('invitation.signUp'), exact: true }).click();
      await h1(b, signUp('title'));
      // The invited address, filled in and read-only.
      const address = b.locator('input[name="identifier"]');
      expect(await address.inputValue()).toBe(invitee);
      expect(await address.evaluate((e) => (e as HTMLInputElement).readOnly)).toBe(true);
      await b.getByText(signUp('first.invited'), { exact: true }).waitFor();
      // Issue 46's proof: this state in both themes and at both sizes, not only this test's own.
      await axeAllCombinations(b, `${screen}: sign-up from an invitation`);
      expect(await address.evaluate((e) => (e as HTMLInputElement).readOnly)).toBe(true);
      await b.locator('input[name="password"]').fill(inviteePassword);
      const mails = mailCount(smtp, invitee);
      await button(b, signUp('create')).click();
      await b.locator('input[name="code"]').fill(await mailCode(smtp, invitee, mails + 1));
      await button(b, signUp('confirm')).click();
      await h1(b, t('invitation.title'));
      await axeCheck(b, `${screen}: invitation, signed in`);
      await button(b, t('invitation.accept')).click();
      await b.getByText(t('invitation.accepted', { org: orgName, role: roleName('member') })).waitFor();
      expect(await b.evaluate(() => sessionStorage.getItem('account-ui.invitation'))).toBeNull();
      await axeCheck(b, `${screen}: invitation accepted`);

      // B switches to the organization in the frame and sees the role "Member".
      const seen: { url: string; bearer: string | undefined }[] = [];
      b.on('request', (r) => seen.push({ url: r.url(), bearer: r.headers().authorization?.slice(7) }));
      const toggle = await switcher(b, screen);
      await toggle.click();
      await axeCheck(b, `${screen}: switcher open`);
      // Its rows start at the same edge, each on one line of the same height.
      const rows = await b.locator('.org-choices li > :first-child').evaluateAll((els) =>
        els.map((e) => {
          const r = e.getBoundingClientRect();
          return {
            left: Math.round(r.left),
            height: Math.round(r.height),
            wrap: getComputedStyle(e).whiteSpace,
          };
        }),
      );
      expect(rows.length).toBe(3);
      expect(new Set(rows.map((r) => r.left)).size).toBe(1);
      expect(new Set(rows.map((r) => r.height)).size).toBe(1);
      expect(rows.every((r) => r.wrap === 'nowrap')).toBe(true);
      await b
        .getByRole('button', {
          name: t('switcher.option', { name: orgName, role: roleName('member') }),
          exact: true,
        })
        .click();
      await expect
        .poll(async () => (await switcher(b, screen)).innerText())
        .toBe(t('switcher.label', { name: orgName }));
      await b.goto(`${origin}/account/#/`);
      await h1(b, account('title'));
      const home = b.locator('#home-organizations');
      await home.waitFor();
      expect(await home.innerText()).toContain(orgName);
      expect(await home.innerText()).toContain(t('home.role', { role: roleName('member') }));
      expect(await home.innerText()).toContain(t('list.active'));
      await axeCheck(b, `${screen}: home with the organization`);
      // The page's calls after the switch carry the token it answered (no renewal in between).
      const after = seen.slice(seen.findIndex((r) => r.url.endsWith('/session/active-organization')) + 1);
      expect(after.some((r) => r.url.includes('/browser-session/renewals'))).toBe(false);
      const bearer = after.filter((r) => r.url.endsWith('/session/context')).at(-1)?.bearer ?? '';
      const claims = JSON.parse(Buffer.from(bearer.split('.')[1] ?? '', 'base64url').toString());
      expect(claims.org_role).toBe('member');
      const active = { org: claims.org_id as string };
      expect(active.org).toMatch(/^[0-9a-f-]{36}$/);

      // A makes B an admin; B's next page shows it.
      await a.reload();
      await h1(a, orgName);
      const row = a.locator('#member-list li').filter({ hasNot: a.getByText('(you)') });
      await expect.poll(() => a.locator('#member-list li').count()).toBe(2);
      // The owner sees the new member by their address, unmasked.
      expect(await row.locator('.identifier').innerText()).toBe(invitee);
      await row.getByRole('combobox').selectOption('admin');
      await row.getByRole('button', { name: /^Change role of / }).click();
      await a.locator('#members .notice').waitFor();
      await expect.poll(() => a.locator('#member-list').innerText()).toContain(roleName('admin'));
      await axeCheck(a, `${screen}: role changed`);
      await b.goto(`${origin}/account/#/organizations`);
      await h1(b, t('list.title'));
      await b.goto(`${origin}/account/#/`);
      await h1(b, account('title'));
      expect(await b.locator('#home-organizations').innerText()).toContain(
        t('home.role', { role: roleName('admin') }),
      );
      await b.goto(`${origin}/account/#/organizations/${active.org}`);
      await h1(b, orgName);
      expect(await b.locator('#org-role').innerText()).toBe(t('org.yourRole', { role: roleName('admin') }));
      await axeCheck(b, `${screen}: organization page (admin)`);

      // The link again: already accepted, in the person's words.
      await b.goto(link);
      await h1(b, t('invitation.title'));
      expect(await b.locator('#invitation-refused').innerText()).toBe(t('invitation.alreadyAccepted'));
      await axeCheck(b, `${screen}: invitation already accepted`);

      // A requires a second factor: B (without one) is led to 2-step verification when switching.
      await a.reload();
      await h1(a, orgName);
      await a.getByLabel(t('settings.secondFactor'), { exact: true }).check();
      // The settings have one save button.
      expect(await a.locator('#org-settings button').count()).toBe(1);
      await button(a, t('settings.save')).click();
      await a.locator('#org-settings .notice').waitFor();
      await b.goto(`${origin}/account/#/`);
      await h1(b, account('title'));
      await (await switcher(b, screen)).click();
      await button(b, t('switcher.personal')).click();
      await expect
        .poll(async () => (await switcher(b, screen)).innerText())
        .toBe(t('switcher.label', { name: t('switcher.personal') }));
      await (await switcher(b, screen)).click();
      await button(b, t('switcher.option', { name: orgName, role: roleName('admin') })).click();
      await h1(b, security('twoStep.title'));
      expect(await b.locator('main .alert').first().innerText()).toBe(
        t('switcher.secondFactor', { name: orgName }),
      );
      await axeCheck(b, `${screen}: second factor required`);

      // A removes B (asked first); B's next page no longer lists the organization.
      await a.reload();
      await h1(a, orgName);
      await a.getByRole('button', { name: /^Remove / }).click();
      const question = a.getByRole('group', { name: /^Remove .* from / });
      await question.waitFor();
      await axeCheck(a, `${screen}: remove, the question`);
      await question.getByRole('button', { name: t('members.remove'), exact: true }).click();
      await a.locator('#members .notice').waitFor();
      await expect.poll(() => a.locator('#member-list li').count()).toBe(1);
      await b.goto(`${origin}/account/#/`);
      await h1(b, account('title'));
      expect(await b.locator('#home-organizations').innerText()).toBe(t('home.none'));
      expect(pageErrors).toEqual([]);
    }, 120_000);
  }

  it('an owner assigns a configured role by its display name, then transfers the ownership (step-up)', async () => {
    const owner = await createPerson(t0.ctx, 'olga-owner@example.com');
    const heir = await createPerson(t0.ctx, 'henry-heir@example.com');
    const org = await createOrganization(t0, (await signIn(t0.app, owner)).accessToken, 'Initech');
    await join(t0, org.id, heir.identityId, 'member');
    const a = await atOrganizations('desktop', owner);
    await a.goto(`${origin}/account/#/organizations/${org.id}`);
    await h1(a, 'Initech');
    // The configured role is offered under its display name.
    const row = a.locator('#member-list li', { hasText: heir.email });
    const picker = row.getByRole('combobox');
    expect(await picker.locator('option').allInnerTexts()).toEqual([
      roleName('owner'),
      roleName('admin'),
      roleName('member'),
      'Billing',
    ]);
    await picker.selectOption('billing');
    await row.getByRole('button', { name: t('members.changeLabel', { name: heir.email }) }).click();
    await a
      .locator('#members .notice', { hasText: t('members.changed', { name: heir.email, role: 'Billing' }) })
      .waitFor();
    expect(await a.locator('#member-list li', { hasText: heir.email }).innerText()).toContain('Billing');
    await axeCheck(a, 'configured role assigned');

    // The transfer page: the member chosen, the step-up asked right there, then A is an admin.
    await a.locator('#transfer-link').click();
    await h1(a, t('transfer.title'));
    await axeCheck(a, 'transfer: the form');
    await a.getByLabel(t('transfer.member'), { exact: true }).selectOption(heir.identityId);
    const mails = mailCount(smtp, owner.email);
    await button(a, t('transfer.submit')).click();
    const box = a.locator('.stepup');
    await box.waitFor();
    await axeCheck(a, 'transfer: the step-up');
    await box.locator('input[name="code"]').fill(await mailCode(smtp, owner.email, mails + 1));
    await box.getByRole('button', { name: stepUpText('confirm'), exact: true }).click();
    await h1(a, 'Initech');
    await a.getByText(t('transfer.done', { name: heir.email, org: 'Initech' })).waitFor();
    expect(await a.locator('#org-role').innerText()).toBe(t('org.yourRole', { role: roleName('admin') }));
    expect(await a.locator('#transfer-link').count()).toBe(0);
    await axeCheck(a, 'transfer: done');
    const roles = await t0.ctx.database.db
      .selectFrom('organization_memberships')
      .select(['identity_id', 'role'])
      .where('organization_id', '=', org.id)
      .execute();
    expect(Object.fromEntries(roles.map((r) => [r.identity_id, r.role]))).toEqual({
      [owner.identityId]: 'admin',
      [heir.identityId]: 'owner',
    });
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('an invitation revoked (asked first, gone from the list, its link says so); a rename', async () => {
    const owner = await createPerson(t0.ctx, 'eve-revokes@example.com');
    const invitee = 'carol-revoked@example.com';
    const a = await atOrganizations('desktop', owner);
    await a.getByLabel(t('create.name'), { exact: true }).fill('Globex');
    await button(a, t('create.submit')).click();
    await h1(a, 'Globex');
    await a.locator('#invitations input[name="identifier"]').fill(invitee);
    await a.locator('#invitations').getByLabel(t('invite.role'), { exact: true }).selectOption('admin');
    await button(a, t('invite.submit')).click();
    await a.locator('#invitation-list li').first().waitFor();
    expect(await a.locator('#invitation-list').innerText()).toContain(roleName('admin'));
    const link = await invitationLink(invitee, 1);

    await a.getByRole('button', { name: /^Revoke the invitation for / }).click();
    const question = a.getByRole('group', { name: /^Revoke the invitation for / });
    await question.waitFor();
    await axeCheck(a, 'revoke: the question');
    await question.getByRole('button', { name: t('invitations.revoke'), exact: true }).click();
    // The invitation's own "sent" notice may still be on the page: wait for the list itself.
    await expect.poll(() => a.locator('#invitation-list').innerText()).toBe(t('invitations.none'));
    await a
      .locator('#invitations .notice', { hasText: t('invitations.revoked', { name: invitee }) })
      .waitFor();
    // Renamed in its settings: the page's title follows.
    await a.locator('#org-settings input[name="name"]').fill('Globex Corporation');
    await button(a, t('settings.save')).click();
    await h1(a, 'Globex Corporation');
    await a.getByText(t('settings.renamed', { name: 'Globex Corporation' })).waitFor();
    await axeCheck(a, 'renamed');

    const b = await open('desktop');
    await b.goto(link);
    await h1(b, t('invitation.title'));
    expect(await b.locator('#invitation-refused').innerText()).toBe(t('invitation.revoked'));
    // Nothing left to accept: the token is forgotten.
    expect(await b.evaluate(() => sessionStorage.getItem('account-ui.invitation'))).toBeNull();
    await axeCheck(b, 'invitation revoked');
    expect(pageErrors).toEqual([]);
  }, 60_000);
});

/*
 * Issue 46's new states under axe in both themes and on both screens: the member list as its owner
 * sees it (real addresses), the role pickers with the configured role, the ownership transfer page,
 * the invitation page naming who invited, and the account page's name and picture.
 */
describe('the new organization and profile states, light and dark, desktop and phone', () => {
  let owner: Person;
  let heir: Person;
  let org: { id: string };
  const invitee = 'ivy-invited@example.com';
  let link = '';

  beforeAll(async () => {
    owner = await createPerson(t0.ctx, 'otto-owner@example.com');
    heir = await createPerson(t0.ctx, 'hana-member@example.com');
    const grant = await signIn(t0.app, owner);
    org = await createOrganization(t0, grant.accessToken, 'Umbrella');
    await join(t0, org.id, heir.identityId, 'billing');
    // The owner's name and picture, as the account page sets them.
    const named = await t0.app.inject({
      method: 'PATCH',
      url: '/api/v1/account',
      headers: { authorization: `Bearer ${grant.accessToken}` },
      payload: { givenName: 'Otto', familyName: 'Octavius' },
    });
    expect(named.statusCode, named.body).toBe(200);
    const png = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#884422' } })
      .png()
      .toBuffer();
    const pictured = await t0.app.inject({
      method: 'PUT',
      url: '/api/v1/account/picture',
      headers: { authorization: `Bearer ${grant.accessToken}`, 'content-type': 'image/png' },
      payload: png,
    });
    expect(pictured.statusCode, pictured.body).toBe(200);
    const invited = await t0.app.inject({
      method: 'POST',
      url: `/api/v1/organizations/${org.id}/invitations`,
      headers: { authorization: `Bearer ${grant.accessToken}` },
      payload: { identifierType: 'email', identifier: invitee, role: 'billing' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    link = await invitationLink(invitee, 1);
  });

  for (const theme of ['light', 'dark'] as const) {
    for (const screen of Object.keys(SCREENS) as Screen[]) {
      it(`${theme}, ${screen}`, async () => {
        const context = await browser.newContext({
          viewport: SCREENS[screen],
          locale: 'en-GB',
          colorScheme: theme,
        });
        contexts.push(context);
        const a = await context.newPage();
        a.setDefaultTimeout(10_000);
        a.on('pageerror', (e) => pageErrors.push(String(e)));
        const where = `${theme}, ${screen}`;
        await a.goto(`${origin}/account/`);
        await signInPage(a, owner);
        await a.reload();
        await h1(a, account('title'));

        // The account page: the name and the picture (loaded), with Remove.
        const img = a.locator('#picture-avatar img');
        await expect
          .poll(() => img.evaluate((el: HTMLImageElement) => (el.complete ? el.naturalWidth : 0)))
          .toBe(256);
        expect(await a.locator('#name-form input[name="givenName"]').inputValue()).toBe('Otto');
        expect(await a.locator('#picture-remove').isVisible()).toBe(true);
        await axeCheck(a, `${where}: account page, name and picture`);

        // The organization as its owner sees it: members and invitations by their real address,
        // the configured role in the member's picker and in the invitation's.
        await a.goto(`${origin}/account/#/organizations/${org.id}`);
        await h1(a, 'Umbrella');
        const row = a.locator('#member-list li', { hasText: heir.email });
        await row.waitFor();
        expect(await row.locator('.identifier').innerText()).toBe(heir.email);
        expect(await row.getByRole('combobox').inputValue()).toBe('billing');
        expect(await row.getByRole('combobox').locator('option').allInnerTexts()).toContain('Billing');
        expect(await a.locator('#invitation-list').innerText()).toContain(invitee);
        expect(await a.locator('#invitation-list').innerText()).toContain('Billing');
        const inviteRole = a.locator('#invitations').getByLabel(t('invite.role'), { exact: true });
        expect(await inviteRole.locator('option').allInnerTexts()).toContain('Billing');
        expect(await a.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
          SCREENS[screen].width,
        );
        await axeCheck(a, `${where}: members and invitations (owner), configured role`);

        // The ownership transfer page, a member chosen.
        await a.locator('#transfer-link').click();
        await h1(a, t('transfer.title'));
        await a.getByLabel(t('transfer.member'), { exact: true }).selectOption(heir.identityId);
        await axeCheck(a, `${where}: ownership transfer`);

        // The invitation, opened signed out: who invited, to what, as which role.
        const bContext = await browser.newContext({
          viewport: SCREENS[screen],
          locale: 'en-GB',
          colorScheme: theme,
        });
        contexts.push(bContext);
        const b = await bContext.newPage();
        b.setDefaultTimeout(10_000);
        b.on('pageerror', (e) => pageErrors.push(String(e)));
        await b.goto(link);
        await h1(b, t('invitation.title'));
        await b
          .getByRole('heading', {
            level: 2,
            name: t('invitation.whatFrom', {
              inviter: `Otto Octavius (${owner.email})`,
              org: 'Umbrella',
              role: 'Billing',
            }),
          })
          .waitFor();
        await axeCheck(b, `${where}: invitation, invited by`);
        await bContext.close();
        await context.close();
        expect(pageErrors).toEqual([]);
      }, 60_000);
    }
  }
});
