import { createServer, type Server } from 'node:http';
import { inflateRawSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeAllCombinations, launchChromium, signInPage } from '../helpers/browser.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import {
  axeBoth,
  heading,
  openOrganizationPage,
  ownerWithOrganization,
} from '../helpers/organization-page.js';
import { followToCallback, hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { parse, TestIdp } from '../sso/idp.js';
import { adminCall } from '../sso/support.js';

/**
 * Issue 47's hosted pages in Chromium: a member of an organization whose domain is verified and
 * whose SAML connection is enabled types their email on the hosted sign-in and goes through a test
 * IdP served on loopback (it answers the AuthnRequest with a signed Response, auto-posted to our
 * ACS), landing signed in; an address outside SSO sees the password step as without SSO; an
 * IdP-initiated response stops at #/sso-continue, which names the organization and the connection
 * and signs in only on Continue. axe finds nothing, light and dark.
 */
let t: TestApp;
let idp: TestIdp;
let idpServer: Server;
let dns: TestDns;
let owner: Person;
let idpOrigin: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let origin: string;
let domain: string;
let orgId: string;
let connectionId: string;
let acsUrl: string;
let entityId: string;
const pageErrors: string[] = [];
const clock = new ManualClock(new Date());
/** The OpenID IdP (oidc-provider on loopback), reached as https://idp-oidc.example by the service and the browser. */
const OIDC_ISSUER = 'https://idp-oidc.example';
const OIDC_SECRET = `entra-secret-${'s'.repeat(32)}`;
const hosts: Record<string, string> = {};
let oidcIdp: Upstream | undefined;
/** Our redirect URI for the OpenID connection the owner adds. */
let oidcCallback = '';

/** The IdP's page: a signed Response auto-posted to our ACS (the HTTP-POST binding). */
function postToAcs(samlResponse: string): string {
  return `<!doctype html><html lang="en"><title>IdP</title><form method="post" action="${acsUrl}"><input type="hidden" name="SAMLResponse" value="${samlResponse}"><input type="hidden" name="RelayState" value=""></form><script>document.forms[0].submit()</script></html>`;
}

/** An application of the service's OpenID Provider (its redirect URI is on the IdP's server). */
const APP = 'corp-app';

/** An authorization request of APP, with more parameters (PKCE S256 of a fixed verifier). */
function authorizeUrl(params: Record<string, string>): string {
  const query = new URLSearchParams({
    client_id: APP,
    redirect_uri: `${idpOrigin}/callback`,
    response_type: 'code',
    scope: 'openid',
    state: 'st',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    ...params,
  });
  return `${origin}/oidc/auth?${query}`;
}

/** Who the test IdP signs in next. */
let nextPerson = '';

beforeAll(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  idp = await TestIdp.create(clock.now());
  idpServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', idpOrigin);
    let response: string;
    if (url.pathname === '/sso') {
      const request = url.searchParams.get('SAMLRequest') ?? '';
      const xml = inflateRawSync(Buffer.from(request, 'base64')).toString('utf8');
      const requestId = parse(xml).documentElement?.getAttribute('ID') ?? '';
      response = idp.response({
        acsUrl,
        audience: entityId,
        inResponseTo: requestId,
        now: clock.now(),
        nameId: nextPerson,
      });
    } else if (url.pathname === '/unsolicited') {
      response = idp.response({
        acsUrl,
        audience: entityId,
        inResponseTo: null,
        now: clock.now(),
        nameId: nextPerson,
      });
    } else if (url.pathname === '/callback') {
      // The application's redirect URI (the OpenID Provider's tests below).
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!doctype html><title>App</title>');
      return;
    } else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(postToAcs(response));
  });
  await new Promise<void>((r) => idpServer.listen(0, '127.0.0.1', r));
  idpOrigin = `http://127.0.0.1:${(idpServer.address() as { port: number }).port}`;
  dns = await startDns();
  t = await createTestApp({
    clock,
    admin: true,
    env: {
      ACCOUNT_UI: 'on',
      PUBLIC_ORIGIN: origin,
      DNS_RESOLVERS: dns.address,
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: APP,
          client_name: 'Corp App',
          redirect_uris: [`${idpOrigin}/callback`],
          token_endpoint_auth_method: 'none',
          first_party: true,
        },
      ]),
    },
    upstreamFetch: hostMappingFetch(hosts),
  });
  await t.app.listen({ host: '127.0.0.1', port });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  // The browser at the OpenID IdP's https issuer: the IdP (on loopback) is played through to our
  // callback, as the API suite does, and the browser sent there (the fake signs `login` in at once).
  await context.route(`${OIDC_ISSUER}/**`, async (route) => {
    const arrival = await followToCallback(route.request().url(), {
      callback: oidcCallback,
      fetch: hostMappingFetch(hosts),
    });
    await route.fulfill({ status: 303, headers: { location: arrival.url } });
  });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await new Promise<void>((r) => (idpServer ? idpServer.close(() => r()) : r()));
  await oidcIdp?.close();
  await dns?.close();
});

describe('enterprise sign-in on the hosted pages', () => {
  it('without any enabled connection, the sign-in is as before (the password at once)', async () => {
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    await page.getByLabel('Password', { exact: true }).waitFor();
  });

  it('an owner sets up SSO in the organization’s page: a domain verified by DNS, a SAML connection from the IdP’s metadata, enabled', async () => {
    ({ owner, orgId } = await ownerWithOrganization(t, 'Northwind'));
    domain = `northwind-${orgId.slice(0, 8)}.example`;
    await openOrganizationPage(page, { origin, orgId, name: 'Northwind' }, owner);
    const sso = page.locator('#org-sso');
    await sso.getByRole('heading', { name: 'Single sign-on (SSO)' }).waitFor();
    await expect.poll(() => sso.locator('#connection-list').count()).toBe(0);
    await sso.getByText('No connection yet.').waitFor();
    // The domain: claimed, its TXT record shown, verified once it is published.
    await sso.getByLabel('Domain', { exact: true }).fill(domain);
    await sso.getByRole('button', { name: 'Add domain' }).click();
    await sso.getByText(`${domain} was added.`).waitFor();
    const item = sso.locator(`#domain-list li[data-domain="${domain}"]`);
    const txtName = await item.getByRole('textbox', { name: 'TXT record name' }).inputValue();
    const txtValue = await item.getByRole('textbox', { name: 'TXT record value' }).inputValue();
    expect(txtName).toBe(`_identity-service-verification.${domain}`);
    expect(txtValue).toMatch(/^identity-service-verification=/);
    await axeBoth(page, 'organization SSO, domain to verify');
    await item.getByRole('button', { name: `Verify ${domain}` }).click();
    await sso.getByText('The TXT record was not found yet.').waitFor();
    dns.set(txtName, txtValue);
    await item.getByRole('button', { name: `Verify ${domain}` }).click();
    await sso.getByText(`${domain} is verified.`).waitFor();
    expect(await sso.locator(`#domain-list li[data-domain="${domain}"] .domain-state`).textContent()).toBe(
      'Verified',
    );
    // The connection, from the IdP's metadata pasted; disabled until enabled.
    await sso.getByLabel('Name', { exact: true }).fill('Northwind Okta');
    await sso
      .getByLabel('Your provider’s metadata (XML)')
      .fill(idp.metadata().replaceAll(idp.ssoUrl, `${idpOrigin}/sso`));
    await sso.getByRole('button', { name: 'Add connection' }).click();
    await sso.getByText('Northwind Okta was added.').waitFor();
    const row = sso.locator('#connection-list li').first();
    expect(await row.locator('.connection-state').textContent()).toBe('Disabled');
    entityId = await row.getByRole('textbox', { name: 'Our metadata URL (entity ID)' }).inputValue();
    acsUrl = await row
      .getByRole('textbox', { name: 'Our ACS URL (Assertion Consumer Service)' })
      .inputValue();
    connectionId = (await row.getAttribute('data-connection')) as string;
    expect(entityId).toBe(`${origin}/api/v1/sso/saml/${connectionId}`);
    expect(acsUrl).toBe(`${origin}/api/v1/sso/saml/${connectionId}/acs`);
    await row.getByRole('button', { name: 'Enable Northwind Okta' }).click();
    await sso.getByText('Northwind Okta is enabled').waitFor();
    expect(await sso.locator('#connection-list li .connection-state').first().textContent()).toBe('Enabled');
    await axeBoth(page, 'organization SSO, connection enabled');
  });

  it('a member types their work email and signs in through the IdP', async () => {
    await context.clearCookies();
    await page.goto(`${origin}/account/#/sign-in`);
    await page.reload();
    await heading(page, 'Sign in');
    // Identifier first: no password field until the address is known not to sign in by SSO.
    await expect.poll(() => page.getByLabel('Password', { exact: true }).isVisible()).toBe(false);
    await axeBoth(page, 'sign-in, identifier first');
    nextPerson = `ana@${domain}`;
    await page.getByLabel('Email or phone').fill(nextPerson);
    await page.getByRole('button', { name: 'Continue', exact: true }).click();
    await heading(page, 'Your account');
    expect(page.url()).not.toMatch(/handoff=/);
    await expect.poll(() => page.locator('.identifier').first().textContent()).toBe(nextPerson);
    // The IdP's person became a member of the organization.
    const members = await t.ctx.database.db
      .selectFrom('organization_memberships')
      .select('identity_id')
      .where('organization_id', '=', orgId)
      .execute();
    expect(members.length).toBe(2);
  });

  it('an IdP that answers for an address outside the verified domains: told so, signed out, nothing in the address bar', async () => {
    await context.clearCookies();
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    nextPerson = 'eve@elsewhere.example';
    await page.getByLabel('Email or phone').fill(`eve@${domain}`);
    await page.getByRole('button', { name: 'Continue', exact: true }).click();
    await page.getByText('with an email address outside its verified domains').waitFor();
    expect(page.url()).toBe(`${origin}/account/#/sign-in`);
    await axeBoth(page, 'sign-in, SSO refused');
  });

  it('an address outside SSO meets the password step and signs in as without SSO', async () => {
    await context.clearCookies();
    const person = await createPerson(t.ctx, 'lin@elsewhere.example');
    await page.goto(`${origin}/account/#/sign-in`);
    await page.reload();
    await heading(page, 'Sign in');
    await page.getByLabel('Email or phone').fill(person.email);
    await page.getByRole('button', { name: 'Continue', exact: true }).click();
    const password = page.getByLabel('Password', { exact: true });
    await password.waitFor();
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('name')))
      .toBe('password');
    await axeBoth(page, 'sign-in, password step');
    await password.fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await heading(page, 'Your account');
  });

  it('an application’s login_hint outside SSO: the hosted sign-in opens with the identifier filled', async () => {
    await context.clearCookies();
    const person = await createPerson(t.ctx, 'mei@elsewhere.example');
    await page.goto(authorizeUrl({ login_hint: person.email }));
    await page.waitForURL(/\/account\/#\/authorize\//);
    await heading(page, 'Sign in to continue to Corp App');
    const identifier = page.getByLabel('Email or phone');
    await expect.poll(() => identifier.inputValue()).toBe(person.email);
    await axeBoth(page, 'application sign-in, login_hint filled');
    // Identifier first: Continue, then the password, then back to the application.
    await page.getByRole('button', { name: 'Continue', exact: true }).click();
    await page.getByLabel('Password', { exact: true }).fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(`${idpOrigin}/callback?**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
  });

  it('an application’s login_hint of a verified domain, or its organization: through the IdP and back to the application', async () => {
    const requests: Record<string, string>[] = [{ login_hint: `ida@${domain}` }, { organization: orgId }];
    for (const params of requests) {
      await context.clearCookies();
      await page.goto('about:blank');
      nextPerson = `ida@${domain}`;
      await page.goto(authorizeUrl(params));
      await page.waitForURL(`${idpOrigin}/callback?**`);
      expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    }
  });

  it('signed in by password, a request naming the organization still goes through its IdP, once, and back', async () => {
    await context.clearCookies();
    const person = await createPerson(t.ctx, 'noa@elsewhere.example');
    await page.goto(`${origin}/account/#/sign-in`);
    await page.reload();
    await page.getByLabel('Email or phone').fill(person.email);
    await page.getByRole('button', { name: 'Continue', exact: true }).click();
    await page.getByLabel('Password', { exact: true }).fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await heading(page, 'Your account');
    nextPerson = `ida@${domain}`;
    const acsPosts: string[] = [];
    page.on('request', (r) => {
      if (r.url() === acsUrl) acsPosts.push(r.url());
    });
    await page.goto(authorizeUrl({ organization: orgId }));
    await page.waitForURL(`${idpOrigin}/callback?**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    // The page exchanged the IdP's answer rather than handing the password session back (which
    // would have gone to the IdP again).
    expect(acsPosts.length).toBe(1);
  });

  it('an IdP-initiated response stops at a page naming the organization; Continue signs in', async () => {
    await context.clearCookies();
    const allowed = await adminCall(t, 'PATCH', `/organizations/${orgId}/connections/${connectionId}`, {
      saml: { allowIdpInitiated: true },
    });
    expect(allowed.statusCode, allowed.body).toBe(200);
    nextPerson = `bo@${domain}`;
    await page.goto(`${idpOrigin}/unsolicited`);
    await heading(page, 'Continue signing in');
    expect(page.url()).toMatch(/#\/sso-continue$/);
    await expect.poll(() => page.locator('#sso-organization').textContent()).toBe('Northwind');
    expect(await page.locator('#sso-connection').textContent()).toBe('Northwind Okta');
    // Nothing is signed in by the landing alone.
    const sessions = await t.ctx.database.db.selectFrom('sessions').select('id').execute();
    await axeBoth(page, 'sso-continue');
    expect((await t.ctx.database.db.selectFrom('sessions').select('id').execute()).length).toBe(
      sessions.length,
    );
    await page.getByRole('button', { name: 'Continue', exact: true }).click();
    await heading(page, 'Your account');
    await expect.poll(() => page.locator('.identifier').first().textContent()).toBe(nextPerson);
  });

  it('in French: the identifier-first step and the page that asks to continue', async () => {
    const fr = await browser.newContext({ locale: 'fr-FR' });
    try {
      const p = await fr.newPage();
      p.setDefaultTimeout(10_000);
      p.on('pageerror', (e) => pageErrors.push(String(e)));
      await p.goto(`${origin}/account/#/sign-in`);
      await p.getByRole('button', { name: 'Continuer', exact: true }).waitFor();
      await axeBoth(p, 'sign-in, identifier first, French');
      nextPerson = `cy@${domain}`;
      await p.goto(`${idpOrigin}/unsolicited`);
      await heading(p, 'Poursuivre la connexion');
      await p.getByText('Organisation', { exact: true }).waitFor();
      await axeBoth(p, 'sso-continue, French');
      await p.getByRole('button', { name: 'Continuer', exact: true }).click();
      await heading(p, /./);
      await expect.poll(() => p.locator('.identifier').first().textContent()).toBe(nextPerson);
    } finally {
      await fr.close();
    }
  });

  it('the owner tests the connection: the result page shows what the IdP sent, and nobody is signed in or created', async () => {
    await context.clearCookies();
    await page.goto(`${origin}/account/#/sign-in`);
    await signInPage(page, { email: owner.email, password: owner.password });
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/organizations/${orgId}`);
    await heading(page, 'Northwind');
    const count = async (table: 'sessions' | 'identities' | 'organization_memberships') =>
      (await t.ctx.database.db.selectFrom(table).select('created_at').execute()).length;
    const before = [
      await count('sessions'),
      await count('identities'),
      await count('organization_memberships'),
    ];
    nextPerson = `zed@${domain}`;
    await page.locator('#org-sso').getByRole('button', { name: 'Test connection Northwind Okta' }).click();
    await heading(page, 'Connection test');
    expect(page.url()).toBe(`${origin}/account/#/sso-test`);
    await page.locator('#sso-test-summary').getByText('Every check passed').waitFor();
    expect(await page.locator('#sso-test-subject').textContent()).toBe(nextPerson);
    expect(await page.locator('#sso-test-email').textContent()).toBe(nextPerson);
    expect(
      await page
        .locator('#sso-test-checks li')
        .evaluateAll((lis) => lis.map((li) => li.getAttribute('data-check'))),
    ).toEqual(['flow', 'response', 'email', 'domain']);
    await axeAllCombinations(page, 'sso-test result');
    expect([
      await count('sessions'),
      await count('identities'),
      await count('organization_memberships'),
    ]).toEqual(before);
    // A redraw in this tab shows it again (the code kept for this tab only).
    await page.reload();
    await page.locator('#sso-test-summary').getByText('Every check passed').waitFor();
  });

  it('the owner adds an OpenID connection (issuer, client, secret never shown again, a claim) and tests it', async () => {
    await context.clearCookies();
    await page.goto(`${origin}/account/#/sign-in`);
    await signInPage(page, { email: owner.email, password: owner.password });
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/organizations/${orgId}`);
    await heading(page, 'Northwind');
    const sso = page.locator('#org-sso');
    const add = sso.locator('#sso-add');
    // The kind is chosen by keyboard: the radio group moves with the arrow keys.
    await add.getByRole('radio', { name: 'SAML 2.0' }).focus();
    await page.keyboard.press('ArrowDown');
    expect(await add.getByRole('radio', { name: 'OpenID Connect' }).isChecked()).toBe(true);
    await add.getByLabel('Issuer', { exact: true }).waitFor();
    expect(await add.locator('#sso-add-saml').isHidden()).toBe(true);
    await axeBoth(page, 'organization SSO, add an OpenID connection');
    // What is missing is named on the field, and nothing is sent.
    await add.getByLabel('Name', { exact: true }).fill('Northwind Entra');
    await add.getByRole('button', { name: 'Add connection' }).click();
    await expect
      .poll(() => add.getByLabel('Issuer', { exact: true }).getAttribute('aria-invalid'))
      .toBe('true');
    // The service's refusal (an issuer that is not https), in the person's words, on the fields.
    await add.getByLabel('Issuer', { exact: true }).fill('http://idp-oidc.example');
    await add.getByLabel('Client ID', { exact: true }).fill('northwind-client');
    await add.getByLabel('Client secret', { exact: true }).fill(OIDC_SECRET);
    await add.getByRole('button', { name: 'Add connection' }).click();
    await add.getByText('Check that the issuer is an https address').waitFor();
    expect(await add.getByLabel('Issuer', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await axeBoth(page, 'organization SSO, OpenID connection refused');
    await add.getByLabel('Issuer', { exact: true }).fill(OIDC_ISSUER);
    await add.getByLabel('Claim carrying the email address').fill('email');
    await add.getByRole('button', { name: 'Add connection' }).click();
    await sso.getByText('Northwind Entra was added.').waitFor();
    const row = sso.locator('#connection-list li', { hasText: 'Northwind Entra' });
    await row.getByText('secret set (hidden)').waitFor();
    // The secret is nowhere on the page any more (the form was drawn anew, empty).
    expect(await page.content()).not.toContain(OIDC_SECRET);
    expect(
      await page.evaluate(() => [...document.querySelectorAll('input')].map((i) => i.value).join('\n')),
    ).not.toContain(OIDC_SECRET);
    const oidcId = (await row.getAttribute('data-connection')) as string;
    const redirectUri = await row
      .getByRole('textbox', { name: 'Our redirect URI (give it to your provider)' })
      .inputValue();
    expect(redirectUri).toBe(`${origin}/api/v1/sso/oidc/${oidcId}/callback`);
    oidcCallback = redirectUri;
    const stored = await t.ctx.database.db
      .selectFrom('sso_connections')
      .select(['issuer', 'client_id', 'attribute_mapping'])
      .where('id', '=', oidcId)
      .executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ issuer: OIDC_ISSUER, client_id: 'northwind-client' });
    await axeBoth(page, 'organization SSO, OpenID connection added');
    // The IdP knows the client and our redirect URI; the owner tests the connection (disabled).
    oidcIdp = await startUpstream({
      issuer: OIDC_ISSUER,
      clientId: 'northwind-client',
      clientSecret: OIDC_SECRET,
      redirectUris: [redirectUri],
    });
    hosts['idp-oidc.example'] = oidcIdp.origin;
    oidcIdp.setAccount('entra-zed', { email: `zed@${domain}`, email_verified: true, given_name: 'Zed' });
    const count = async (table: 'sessions' | 'identities' | 'organization_memberships') =>
      (await t.ctx.database.db.selectFrom(table).select('created_at').execute()).length;
    const before = [
      await count('sessions'),
      await count('identities'),
      await count('organization_memberships'),
    ];
    await row.getByRole('button', { name: 'Test connection Northwind Entra' }).click();
    await heading(page, 'Connection test');
    await page.locator('#sso-test-summary').getByText('Every check passed').waitFor();
    expect(await page.locator('#sso-test-subject').textContent()).toBe('entra-zed');
    expect(await page.locator('#sso-test-email').textContent()).toBe(`zed@${domain}`);
    expect(
      await page
        .locator('#sso-test-checks li')
        .evaluateAll((lis) => lis.map((li) => li.getAttribute('data-check'))),
    ).toEqual(['flow', 'response', 'email', 'email_verified', 'domain']);
    await axeBoth(page, 'sso-test result, OpenID');
    expect([
      await count('sessions'),
      await count('identities'),
      await count('organization_memberships'),
    ]).toEqual(before);
    // Removed again: the SAML connection stays the organization's oldest (the sign-in tests below).
    await page.goto(`${origin}/account/#/organizations/${orgId}`);
    await heading(page, 'Northwind');
    await sso.getByRole('button', { name: 'Delete Northwind Entra' }).click();
    await sso.getByRole('button', { name: 'Delete', exact: true }).click();
    await sso.getByText('Northwind Entra was deleted.').waitFor();
  });

  it('in French: the OpenID form and its refusal', async () => {
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
      const add = p.locator('#sso-add');
      await add.getByRole('radio', { name: 'OpenID Connect' }).check();
      await add.getByLabel('Nom', { exact: true }).fill('Entra');
      await add.getByLabel('Émetteur (issuer)').fill('http://idp-oidc.example');
      await add.getByLabel('Identifiant client').fill('c');
      await add.getByLabel('Secret client').fill('s');
      await add.getByRole('button', { name: 'Ajouter la connexion' }).click();
      await add.getByText('Vérifiez que l’émetteur est une adresse https').waitFor();
      await axeBoth(p, 'organization SSO, OpenID connection refused, French');
    } finally {
      await fr.close();
    }
  });

  it('the owner requires SSO after a confirmation that says who is signed out, then stops requiring it', async () => {
    await context.clearCookies();
    await page.goto(`${origin}/account/#/sign-in`);
    await signInPage(page, { email: owner.email, password: owner.password });
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/organizations/${orgId}`);
    await heading(page, 'Northwind');
    const sso = page.locator('#org-sso');
    const part = sso.locator('#sso-requirement');
    await part.getByText('SSO is not required').waitFor();
    await part.getByRole('button', { name: 'Require SSO', exact: true }).click();
    await part.getByText('Everyone with an address in these domains is signed out now').waitFor();
    await axeBoth(page, 'organization SSO, require SSO confirmation');
    await part.getByRole('button', { name: 'Require SSO and sign them out' }).click();
    await sso.getByText('SSO is now required. Those people were signed out.').waitFor();
    await part.getByText('SSO is required for your verified domains.').waitFor();
    // Ana (of the verified domain) was signed out; the owner (outside it) was not.
    const ana = await t.ctx.database.db
      .selectFrom('sessions as s')
      .innerJoin('identifiers as i', 'i.identity_id', 's.identity_id')
      .select('s.revoked_reason')
      .where('i.value', '=', `ana@${domain}`)
      .execute();
    expect(ana.map((r) => r.revoked_reason)).toContain('sso_required');
    await axeBoth(page, 'organization SSO, SSO required');
    await part.getByRole('button', { name: 'Stop requiring SSO' }).click();
    await sso.getByText('SSO is no longer required.').waitFor();
  });

  it('the owner disables, then deletes the connection: the sign-in asks for the password at once again', async () => {
    await context.clearCookies();
    await page.goto(`${origin}/account/#/sign-in`);
    await signInPage(page, { email: owner.email, password: owner.password });
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/organizations/${orgId}`);
    await heading(page, 'Northwind');
    const sso = page.locator('#org-sso');
    await sso.getByRole('button', { name: 'Disable Northwind Okta' }).click();
    await sso.getByText('Northwind Okta is disabled.').waitFor();
    expect(await sso.locator('#connection-list li .connection-state').first().textContent()).toBe('Disabled');
    await sso.getByRole('button', { name: 'Delete Northwind Okta' }).click();
    await sso.getByRole('button', { name: 'Delete', exact: true }).click();
    await sso.getByText('Northwind Okta was deleted.').waitFor();
    await sso.getByText('No connection yet.').waitFor();
    await axeBoth(page, 'organization SSO, no connection, a verified domain');
    // Neither metadata nor the three fields: said, nothing sent.
    await sso.getByLabel('Name', { exact: true }).fill('Backup IdP');
    await sso.getByRole('button', { name: 'Add connection' }).click();
    await sso.getByText('Paste your provider’s metadata, or fill in its entity ID').waitFor();
    // The metadata from a chosen file.
    await sso.locator('input[type="file"]').setInputFiles({
      name: 'idp-metadata.xml',
      mimeType: 'application/xml',
      buffer: Buffer.from(idp.metadata()),
    });
    await expect
      .poll(() => sso.getByLabel('Your provider’s metadata (XML)').inputValue())
      .toContain(idp.entityId);
    await sso.getByRole('button', { name: 'Add connection' }).click();
    await sso.getByText('Backup IdP was added.').waitFor();
    await sso.getByRole('button', { name: 'Delete Backup IdP' }).click();
    await sso.getByRole('button', { name: 'Delete', exact: true }).click();
    await sso.getByText('Backup IdP was deleted.').waitFor();
    await context.clearCookies();
    await page.goto('about:blank');
    await page.goto(`${origin}/account/#/sign-in`);
    await heading(page, 'Sign in');
    await page.getByLabel('Password', { exact: true }).waitFor();
  });

  it('no page error', () => {
    expect(pageErrors).toEqual([]);
  });
});
