import { createServer, type Server } from 'node:http';
import { inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { axeAllCombinations } from '../helpers/browser.js';
import { type ConsoleFixture, startConsole } from '../helpers/console.js';
import { signIn as apiSignIn, bearer, createPerson } from '../helpers/identities.js';
import { parse, TestIdp } from '../sso/idp.js';

/*
 * An operator tests an organization's SAML connection from the console (docs/sso.md, "By an
 * operator"): Test opens the admin API's single-use start URL in a new tab, which goes to a test
 * IdP on loopback (it answers the AuthnRequest with a signed Response auto-posted to our ACS) and
 * lands on the hosted "test over" page; back on the console, Show result shows the checks and
 * what the IdP sent. Nobody is signed in. axe on the result, light and dark, every size.
 */

let fx: ConsoleFixture;
let idp: TestIdp;
let idpServer: Server;
let idpOrigin: string;
let orgId: string;
let acsUrl = '';
let entityId = '';
const DOMAIN = 'contoso.example';
const PERSON = `lee@${DOMAIN}`;

function adminCall(method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) {
  return fx.admin().inject({
    method,
    url: `/admin/v1${url}`,
    headers: bearer(ADMIN_KEY),
    ...(payload ? { payload } : {}),
  });
}

beforeAll(async () => {
  fx = await startConsole({ ACCOUNT_UI: 'on' });
  const { f } = fx;
  idp = await TestIdp.create(f.t.clock.now());
  idpServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', idpOrigin);
    if (url.pathname !== '/sso') {
      res.writeHead(404).end();
      return;
    }
    const request = url.searchParams.get('SAMLRequest') ?? '';
    const xml = inflateRawSync(Buffer.from(request, 'base64')).toString('utf8');
    const response = idp.response({
      acsUrl,
      audience: entityId,
      inResponseTo: parse(xml).documentElement?.getAttribute('ID') ?? '',
      now: f.t.clock.now(),
      nameId: PERSON,
    });
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<!doctype html><html lang="en"><title>IdP</title><form method="post" action="${acsUrl}"><input type="hidden" name="SAMLResponse" value="${response}"></form><script>document.forms[0].submit()</script></html>`,
      );
  });
  await new Promise<void>((r) => idpServer.listen(0, '127.0.0.1', r));
  idpOrigin = `http://127.0.0.1:${(idpServer.address() as { port: number }).port}`;
  const owner = await createPerson(f.t.ctx, 'contoso.owner@example.com');
  const created = await adminCall('POST', '/organizations', {
    name: 'Contoso',
    slug: 'contoso',
    ownerIdentityId: owner.identityId,
  });
  expect(created.statusCode, created.body).toBe(201);
  orgId = created.json().data.id;
  const claimed = await f.t.app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${orgId}/domains`,
    headers: bearer((await apiSignIn(f.t.app, owner)).accessToken),
    payload: { domain: DOMAIN },
  });
  expect(claimed.statusCode, claimed.body).toBe(201);
  const verified = await adminCall(
    'POST',
    `/organizations/${orgId}/domains/${claimed.json().data.id}/verifications`,
  );
  expect(verified.statusCode, verified.body).toBe(200);
  const connection = await adminCall('POST', `/organizations/${orgId}/connections`, {
    type: 'saml',
    name: 'Contoso SAML',
    saml: { metadataXml: idp.metadata().replaceAll(idp.ssoUrl, `${idpOrigin}/sso`) },
  });
  expect(connection.statusCode, connection.body).toBe(201);
  acsUrl = connection.json().data.saml.acsUrl;
  entityId = connection.json().data.saml.entityId;
}, 240_000);
afterAll(async () => {
  await fx?.close();
  await new Promise<void>((r) => (idpServer ? idpServer.close(() => r()) : r()));
});

describe("the console's connection test", () => {
  it(
    'an owner tests a connection: the IdP in a new tab, then the result on the page',
    { timeout: 400_000 },
    async () => {
      const owner = await fx.operator('owner');
      const { context, page } = await fx.signIn(owner);
      const before = (await fx.f.t.ctx.database.db.selectFrom('identities').select('id').execute()).length;
      await page.goto(`${fx.consoleOrigin}/console/#/organizations/${orgId}`);
      await page
        .getByRole('heading', { level: 1, name: 'Organization Contoso' })
        .waitFor({ timeout: 90_000 });
      const opened = context.waitForEvent('page');
      await page.getByRole('button', { name: 'Test the connection Contoso SAML' }).click();
      const tab = await opened;
      await tab.waitForURL(/\/account\/#\/sso-test-done$/, { timeout: 30_000 });
      await tab.getByText('The connection test is over.').waitFor();
      await tab.close();
      const panel = page.locator('#connection-test');
      await panel.getByText('opened in a new tab').waitFor();
      await panel.getByRole('button', { name: 'Show result' }).click();
      await panel.locator('#connection-test-summary').getByText('Every check passed').waitFor();
      expect(await panel.locator('#connection-test-subject').textContent()).toBe(PERSON);
      expect(await panel.locator('#connection-test-email').textContent()).toBe(PERSON);
      await axeAllCombinations(page, 'organization, connection test result');
      // Nobody was signed in or made; the test is audited with the operator.
      expect((await fx.f.t.ctx.database.db.selectFrom('identities').select('id').execute()).length).toBe(
        before,
      );
      const audited = await fx.f.t.ctx.database.db
        .selectFrom('audit_records')
        .select('actor')
        .where('name', '=', 'organization.connection.tested')
        .execute();
      expect(audited.map((r) => r.actor)).toEqual([`operator:${owner.person.identityId}`]);
      await context.close();
    },
  );
});
