import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { axeAllCombinations } from '../helpers/browser.js';
import { type ConsoleFixture, startConsole } from '../helpers/console.js';
import { signIn as apiSignIn, bearer, createPerson, type Person } from '../helpers/identities.js';
import type { OidcFixture } from '../helpers/oidc.js';
import type { Candidate } from '../helpers/operators.js';
import { messagesTo } from '../helpers/outbox.js';

/*
 * The operators' console, continued (docs/admin.md, "The console's pages"): an organization's page
 * (policy, members, invitations, domains, SCIM) where an owner acts and support only reads; an
 * owner edits and deletes an OpenID client; an erasure that needs a fresh sign-in comes back to
 * the person and the erase dialog; support finds "resend confirmation" absent, with its reason.
 * axe on every new page in light and dark, at every size.
 */

let f: OidcFixture;
let consoleOrigin: string;
let orgId: string;
let orgOwner: Person;
let orgMember: Person;
let inviteeId: string;
let domainId: string;
const INVITEE = 'invitee@example.com';
const NEWCOMER = 'newcomer@example.com';

let fx: ConsoleFixture;
const admin = () => fx.admin();

async function adminCall(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) {
  return admin().inject({
    method,
    url: `/admin/v1${url}`,
    headers: bearer(ADMIN_KEY),
    ...(payload ? { payload } : {}),
  });
}

beforeAll(async () => {
  fx = await startConsole();
  ({ f, consoleOrigin } = fx);
  orgOwner = await createPerson(f.t.ctx, 'org.owner@example.com');
  orgMember = await createPerson(f.t.ctx, 'org.member@example.com');
  const created = await adminCall('POST', '/organizations', {
    name: 'Northwind',
    slug: 'northwind',
    ownerIdentityId: orgOwner.identityId,
  });
  expect(created.statusCode, created.body).toBe(201);
  orgId = created.json().data.id;
  expect(
    (await adminCall('PUT', `/organizations/${orgId}/members/${orgMember.identityId}`, { role: 'member' }))
      .statusCode,
  ).toBe(201);
  const ownerToken = (await apiSignIn(f.t.app, orgOwner)).accessToken;
  const invited = await f.t.app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${orgId}/invitations`,
    headers: bearer(ownerToken),
    payload: { identifierType: 'email', identifier: INVITEE, role: 'member' },
  });
  expect(invited.statusCode, invited.body).toBe(201);
  inviteeId = invited.json().data.id;
  const claimed = await f.t.app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${orgId}/domains`,
    headers: bearer(ownerToken),
    payload: { domain: 'northwind.example' },
  });
  expect(claimed.statusCode, claimed.body).toBe(201);
  domainId = claimed.json().data.id;
  const token = await adminCall('POST', `/organizations/${orgId}/scim-tokens`, { name: 'Okta' });
  expect(token.statusCode, token.body).toBe(201);
}, 240_000);
afterAll(async () => {
  await fx?.close();
});

const operator = (role: 'owner' | 'support') => fx.operator(role);
const hostedSession = (page: Page, c: Candidate) => fx.hostedSession(page, c);
const signIn = (c: Candidate, locale?: string) => fx.signIn(c, locale);

/** Confirms the open dialog, after checking it names what it acts on. */
async function confirm(page: Page, ...names: string[]): Promise<void> {
  const dialog = page.getByRole('dialog');
  for (const name of names) expect(await dialog.textContent()).toContain(name);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await dialog.waitFor({ state: 'detached' });
}

describe("the console's organization page", () => {
  it('support reads it all and finds no act; the API refuses the acts', { timeout: 400_000 }, async () => {
    const support = await operator('support');
    const { context, page } = await signIn(support);
    await page.goto(`${consoleOrigin}/console/#/organizations/${orgId}`);
    await page
      .getByRole('heading', { level: 1, name: 'Organization Northwind' })
      .waitFor({ timeout: 90_000 });
    const text = (await page.locator('#main').textContent()) ?? '';
    for (const shown of [
      'org.owner@example.com',
      'org.member@example.com',
      INVITEE,
      'northwind.example',
      'Okta',
    ])
      expect(text).toContain(shown);
    expect(await page.locator('#scim-status').textContent()).toBe('1 active SCIM token.');
    expect(await page.locator('#policy-second-factor').textContent()).toContain('No');
    expect(text).toContain('Your role reads this organization; only an owner changes it.');
    expect(await page.locator('#main button, #main select').count()).toBe(0);
    await axeAllCombinations(page, 'organization (support)');
    // The API itself refuses what the page does not draw.
    const token = await page.evaluate(async () => {
      const r = await fetch('/console/session', { method: 'POST' });
      return (await r.json()).data.accessToken as string;
    });
    expect(await page.getByRole('button', { name: 'Invite' }).count()).toBe(0);
    expect(await page.locator('#invite-who').count()).toBe(0);
    for (const [method, url] of [
      ['POST', `/admin/v1/organizations/${orgId}/invitations`],
      ['DELETE', `/admin/v1/organizations/${orgId}/invitations/${inviteeId}`],
      ['DELETE', `/admin/v1/organizations/${orgId}/members/${orgMember.identityId}`],
      ['POST', `/admin/v1/organizations/${orgId}/domains/${domainId}/verifications`],
    ] as const) {
      const r = await admin().inject({ method, url, headers: bearer(token) });
      expect(r.statusCode, url).toBe(403);
    }
    const patch = await admin().inject({
      method: 'PATCH',
      url: `/admin/v1/organizations/${orgId}`,
      headers: bearer(token),
      payload: { requireSecondFactor: true },
    });
    expect(patch.statusCode).toBe(403);

    // A person's page: "resend confirmation" is shown absent, with its reason, in English and French.
    await page.goto(`${consoleOrigin}/console/#/people/${orgMember.identityId}`);
    await page.getByRole('heading', { level: 2, name: 'Resend a confirmation' }).waitFor();
    expect(await page.locator('#resend-absent').textContent()).toContain(
      'an account exists only once its address is confirmed',
    );
    await axeAllCombinations(page, 'person with resend note (support)');
    await context.close();
    const fr = await signIn(support, 'fr-FR');
    await fr.page.goto(`${consoleOrigin}/console/#/people/${orgMember.identityId}`);
    await fr.page.getByRole('heading', { level: 2, name: 'Renvoyer une confirmation' }).waitFor();
    await fr.page.goto(`${consoleOrigin}/console/#/organizations/${orgId}`);
    await fr.page
      .getByRole('heading', {
        level: 1,
        name: 'Organization Northwind'.replace('Organization', 'Organisation'),
      })
      .waitFor();
    await axeAllCombinations(fr.page, 'organisation (assistance)');
    await fr.context.close();
  });

  it(
    'an owner changes a member’s role, removes them, revokes an invitation, verifies a domain and sets the policy',
    { timeout: 400_000 },
    async () => {
      const owner = await operator('owner');
      const { context, page } = await signIn(owner);
      await page.goto(`${consoleOrigin}/console/#/organizations/${orgId}`);
      await page
        .getByRole('heading', { level: 1, name: 'Organization Northwind' })
        .waitFor({ timeout: 90_000 });
      await axeAllCombinations(page, 'organization (owner)');

      // The role: chosen, confirmed with a text naming the member, the role and the organization.
      await page.getByLabel('Role of org.member@example.com', { exact: true }).selectOption('admin');
      await page.getByRole('button', { name: 'Change the role of org.member@example.com' }).click();
      await axeAllCombinations(page, 'role confirmation');
      await confirm(page, 'org.member@example.com', 'admin', 'Northwind');
      await expect
        .poll(
          async () =>
            (await adminCall('GET', `/organizations/${orgId}/members`))
              .json()
              .data.find((m: { identityId: string }) => m.identityId === orgMember.identityId)?.role,
        )
        .toBe('admin');
      // The last owner stays: the refusal is shown in the dialog.
      await page
        .getByRole('heading', { level: 1, name: 'Organization Northwind' })
        .waitFor({ timeout: 90_000 });
      await page.getByRole('button', { name: 'Remove org.owner@example.com' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      await expect
        .poll(() => page.getByRole('dialog').getByRole('alert').textContent())
        .toBe('An organization keeps at least one owner.');
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

      await page.getByRole('button', { name: 'Remove org.member@example.com' }).click();
      await confirm(page, 'org.member@example.com', 'Northwind');
      await expect
        .poll(async () => (await adminCall('GET', `/organizations/${orgId}/members`)).json().data.length)
        .toBe(1);

      await page.getByRole('button', { name: `Revoke the invitation of ${INVITEE}` }).click();
      await confirm(page, INVITEE, 'Northwind');
      await page.getByText('No pending invitation.').waitFor();

      // Invite: an address and a role, confirmed naming the address, the organization and the role;
      // the invitation is then pending, the message sent, and it names no inviter.
      await page.getByLabel('Email address or phone number').fill(NEWCOMER);
      await page.getByLabel('Role', { exact: true }).selectOption('admin');
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      await axeAllCombinations(page, 'invitation confirmation');
      await confirm(page, NEWCOMER, 'Northwind', 'admin');
      await page.getByRole('cell', { name: NEWCOMER, exact: true }).waitFor();
      const pending = (await adminCall('GET', `/organizations/${orgId}/invitations`)).json().data;
      expect(pending).toEqual([
        expect.objectContaining({ identifier: NEWCOMER, role: 'admin', invitedBy: null }),
      ]);
      expect(messagesTo(f.t.config.dataDir, NEWCOMER).at(-1)?.text).toContain('/account/#/invitations/');
      // A phone number without its country is stopped before any call; a refusal is said in the
      // dialog: an address that cannot be one.
      await page.getByLabel('Email address or phone number').fill('+33612345678');
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      await expect
        .poll(() => page.locator('form[aria-labelledby="invite-title"] [role="alert"]').textContent())
        .toBe('A phone number needs its country: two letters, such as FR.');
      expect(await page.getByRole('dialog').count()).toBe(0);
      await page.getByLabel('Email address or phone number').fill('not an address@');
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      await expect
        .poll(() => page.getByRole('dialog').getByRole('alert').textContent())
        .toBe('This address or number cannot receive an invitation.');
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

      await page.getByRole('button', { name: 'Verify northwind.example' }).click();
      await confirm(page, 'northwind.example', 'Northwind');
      await page.getByText('An operator').waitFor();

      await page.getByRole('button', { name: 'Require a second factor' }).click();
      await confirm(page, 'Northwind');
      await page.getByRole('button', { name: 'Stop requiring a second factor' }).waitFor();
      expect((await adminCall('GET', `/organizations/${orgId}`)).json().data.requireSecondFactor).toBe(true);

      // Each act audited with the operator as actor.
      const { rows } = await sql<{ name: string }>`
      SELECT DISTINCT name FROM audit_records WHERE actor = ${`operator:${owner.person.identityId}`}`.execute(
        f.t.ctx.database.db,
      );
      expect(rows.map((r) => r.name)).toEqual(
        expect.arrayContaining([
          'organization.member.role_changed',
          'organization.member.removed',
          'organization.invitation.revoked',
          'organization.invitation.sent',
          'organization.domain.verified',
          'organization.updated',
        ]),
      );
      await context.close();
    },
  );
});

describe('OpenID clients', () => {
  it(
    'an owner edits a client’s name and redirect URIs, then deletes it with a confirmation naming it',
    { timeout: 400_000 },
    async () => {
      const reg = await adminCall('POST', '/oidc-clients', {
        client_id: 'reports-app',
        client_name: 'Reports',
        redirect_uris: ['https://reports.example/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
      });
      expect(reg.statusCode, reg.body).toBe(201);
      const owner = await operator('owner');
      const { context, page } = await signIn(owner);
      await page.goto(`${consoleOrigin}/console/#/clients`);
      await page.getByRole('button', { name: 'Edit reports-app' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('heading', { name: 'Edit reports-app' }).waitFor();
      expect(await dialog.getByLabel('Redirect URIs (one a line)', { exact: true }).inputValue()).toBe(
        'https://reports.example/callback',
      );
      await axeAllCombinations(page, 'client edit');
      await dialog.getByLabel('Name', { exact: true }).fill('Quarterly reports');
      await dialog
        .getByLabel('Redirect URIs (one a line)', { exact: true })
        .fill('https://reports.example/callback\nhttps://reports.example/other');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByText('Quarterly reports').waitFor();
      const read = (await adminCall('GET', '/oidc-clients/reports-app')).json().data;
      expect(read.client_name).toBe('Quarterly reports');
      expect(read.redirect_uris).toEqual([
        'https://reports.example/callback',
        'https://reports.example/other',
      ]);

      // A redirect URI the service refuses: the dialog says which field, nothing changes.
      await page.getByRole('button', { name: 'Edit reports-app' }).click();
      await dialog.getByLabel('Redirect URIs (one a line)', { exact: true }).fill('not a uri');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await expect.poll(() => dialog.getByRole('alert').textContent()).toContain('redirect_uris');
      await dialog.getByRole('button', { name: 'Cancel' }).click();

      await page.getByRole('button', { name: 'Delete reports-app' }).click();
      expect(await page.getByRole('dialog').textContent()).toContain('Delete the client reports-app?');
      await axeAllCombinations(page, 'client delete confirmation');
      await confirm(page, 'reports-app');
      await expect
        .poll(async () => (await adminCall('GET', '/oidc-clients/reports-app')).statusCode)
        .toBe(404);
      await expect.poll(() => page.getByRole('button', { name: 'Edit reports-app' }).count()).toBe(0);
      await context.close();
    },
  );
});

describe('erasure after a fresh sign-in', () => {
  it('comes back to the person and the erase dialog, and erases', { timeout: 400_000 }, async () => {
    const person = await createPerson(f.t.ctx, 'fresh.erasure@example.com');
    const owner = await operator('owner');
    const { context, page } = await signIn(owner);
    await page.goto(`${consoleOrigin}/console/#/people/${person.identityId}`);
    await page.getByRole('heading', { level: 1, name: person.email }).waitFor();
    f.t.clock.advance(301);
    await page.getByRole('button', { name: 'Erase' }).click();
    await page
      .getByRole('dialog')
      .getByLabel('Type one of their verified identifiers to confirm')
      .fill(person.email);
    const provider = page.waitForRequest((r) => r.url().startsWith(`${f.origin}/oidc/auth?`));
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    // The console asks the provider for a sign-in again (prompt=login, max_age=0). This fixture
    // serves no hosted pages, so the new sign-in (password and authenticator code) is made as the
    // hosted pages make it, then the console's sign-in runs again and comes straight back.
    const auth = new URL((await provider).url());
    expect(auth.searchParams.get('prompt')).toBe('login');
    // The redirects go on from there (the interaction, then the hosted sign-in's address): the
    // test's own navigation waits for them to land, or the browser cuts it short (seen in CI).
    await page.waitForURL((url) => url.hash.startsWith('#/authorize/'), { waitUntil: 'commit' });
    await hostedSession(page, owner);
    await page.goto(`${consoleOrigin}/console/sign-in`);
    // Back on the person's page, the erase dialog open again.
    await page.waitForURL(`${consoleOrigin}/console/#/people/${person.identityId}`);
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Type one of their verified identifiers to confirm').fill(person.email);
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.getByText('Erased', { exact: true }).waitFor();
    const gone = await adminCall('GET', `/identities/${person.identityId}`);
    expect(gone.json().data.erasedAt).not.toBeNull();
    await context.close();
  });

  it('follows only a person’s page of the console: a stored return elsewhere is ignored', async () => {
    const owner = await operator('owner');
    const { context, page } = await signIn(owner);
    for (const hash of ['https://evil.example/', '#/people/../../x', '//evil.example', '#/clients']) {
      await page.evaluate(
        (hash) =>
          sessionStorage.setItem('console-return', JSON.stringify({ hash, act: 'erase', at: Date.now() })),
        hash,
      );
      await page.goto(`${consoleOrigin}/console/`);
      await page.getByRole('heading', { level: 1, name: 'Find a person' }).waitFor();
      expect(page.url()).toBe(`${consoleOrigin}/console/`);
      expect(await page.evaluate(() => sessionStorage.getItem('console-return'))).toBeNull();
    }
    await context.close();
  });
});
