import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sink, startSink, worker } from '../events/support.js';
import { ADMIN_KEY } from '../helpers/admin.js';
import { axeAllCombinations } from '../helpers/browser.js';
import { type ConsoleFixture, startConsole } from '../helpers/console.js';
import { bearer, createPerson } from '../helpers/identities.js';
import type { OidcFixture } from '../helpers/oidc.js';
import type { Candidate } from '../helpers/operators.js';

/*
 * The console's health and webhook pages in a real browser (docs/admin.md, "Health", "Webhooks"):
 * an owner walks both, adds an endpoint pointing at a real HTTP receiver on loopback and sees the
 * delivery in its log; a support operator reads them in French without a single control; an
 * auditor has neither. axe on every page in light and dark, desktop and phone.
 */

let f: OidcFixture;
let consoleOrigin: string;
let sink: Sink;

let fx: ConsoleFixture;
const admin = () => fx.admin();
const operator = (role: 'owner' | 'support' | 'auditor') => fx.operator(role);
const signIn = (c: Candidate, locale?: string) => fx.signIn(c, locale);

beforeAll(async () => {
  fx = await startConsole({ WEBHOOK_PRIVATE_ADDRESSES: 'allow' });
  ({ f, consoleOrigin } = fx);
  sink = await startSink();
}, 60_000);
afterAll(async () => {
  await sink?.close();
  await fx?.close();
});

/** The screenshots of docs/admin.md ("Health", "Webhooks"). */
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

const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();

/** One operator act that emits an event: the person is disabled, through the admin API. */
async function disableSomeone(): Promise<void> {
  const p = await createPerson(f.t.ctx);
  const r = await admin().inject({
    method: 'POST',
    url: `/admin/v1/identities/${p.identityId}/disablements`,
    headers: bearer(ADMIN_KEY),
  });
  expect(r.statusCode, r.body).toBe(204);
}

describe("the console's health and webhook pages", () => {
  it('an owner reads the health page, adds an endpoint, sees its delivery, edits, rotates, resends, disables and deletes it', async () => {
    const owner = await operator('owner');
    const { context, page } = await signIn(owner);

    await page.getByRole('navigation').getByRole('link', { name: 'Health' }).click();
    await expect.poll(() => heading(page)).toBe('Health');
    await expect
      .poll(() => page.locator('#health-summary').textContent())
      .toContain('Everything is working.');
    const readiness = page.getByRole('region', { name: 'Readiness' });
    await expect.poll(() => readiness.getByRole('row', { name: /Database/ }).textContent()).toContain('Up');
    expect(await readiness.getByRole('row', { name: /Redis/ }).textContent()).toContain('Not configured');
    expect(await page.getByRole('region', { name: 'Signing keys' }).getByRole('row').count()).toBe(4);
    await axeEvery(page, 'health', 'health');

    // An endpoint, added from the form: its secret shown once.
    await page.getByRole('navigation').getByRole('link', { name: 'Webhooks' }).click();
    await expect.poll(() => heading(page)).toBe('Webhook endpoints');
    await expect.poll(() => page.getByText('No webhook endpoint yet.').isVisible()).toBe(true);
    await page.getByLabel('URL', { exact: true }).fill(sink.url);
    await page.getByLabel('Description (optional)').fill('Billing');
    await page.getByLabel('Event types (optional)').fill('identity.disabled identity.enabled');
    await page.getByRole('button', { name: 'Add the endpoint' }).click();
    const secret = page.locator('#webhook-secret');
    await expect.poll(() => secret.textContent()).toMatch(/^whsec_/);
    await axeEvery(page, 'webhook secret', 'webhook-secret');
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => heading(page)).toBe(`Endpoint ${sink.url}`);
    await expect.poll(() => page.getByText('No delivery yet.').isVisible()).toBe(true);

    // An event queues a delivery: the health page counts it.
    await disableSomeone();
    await page.goto(`${consoleOrigin}/console/#/health`);
    const queues = page.getByRole('region', { name: 'Queues' });
    await expect
      .poll(() =>
        queues
          .getByRole('row', { name: /Webhook deliveries/ })
          .locator('td')
          .nth(1)
          .textContent(),
      )
      .toBe('1');

    // The worker sends it to the receiver: the log shows it delivered, answer 200.
    expect(await worker(f.t).runOnce()).toBe(1);
    expect(sink.received).toHaveLength(1);
    await page.goto(`${consoleOrigin}/console/#/webhooks`);
    await page.getByRole('link', { name: sink.url }).click();
    const log = page.getByRole('region', { name: 'Delivery log' });
    await expect.poll(() => log.getByRole('row').nth(1).textContent()).toContain('Delivered');
    expect(await log.getByRole('row').nth(1).textContent()).toContain('200');
    await axeEvery(page, 'webhook endpoint', 'webhook');

    // Edit: the description changes.
    await page.getByLabel('Description (optional)').fill('Billing and CRM');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('dl.details').textContent()).toContain('Billing and CRM');

    // Rotate: a confirmation, then the new secret once, different from the first.
    const first = await secret.count();
    expect(first).toBe(0);
    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => secret.textContent()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => page.locator('#main .hint').first().textContent()).toContain('previous secret');

    // Resend: the delivery is due again.
    await page.getByRole('button', { name: /^Send again/ }).click();
    await expect.poll(() => log.getByRole('row').nth(1).textContent()).toContain('Pending');

    // Disable, then enable, each confirmed.
    await page.getByRole('button', { name: 'Disable' }).click();
    await axeEvery(page, 'webhook disable confirmation');
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => page.locator('dl.details').textContent()).toContain('Disabled by an operator');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => page.locator('dl.details').textContent()).toContain('Enabled');

    // Delete, confirmed: back to an empty list.
    await page.getByRole('button', { name: 'Delete' }).click();
    expect(await page.getByRole('dialog').textContent()).toContain(sink.url);
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => heading(page)).toBe('Webhook endpoints');
    await expect.poll(() => page.getByText('No webhook endpoint yet.').isVisible()).toBe(true);
    await context.close();
  }, 180_000);

  it('an owner adds an endpoint limited to one organization and signed with Ed25519, copies its secret and public key, and recovers its missed deliveries', async () => {
    // An organization whose creation (an event of its own) comes before the endpoint exists.
    const founder = await createPerson(f.t.ctx);
    const org = await admin().inject({
      method: 'POST',
      url: '/admin/v1/organizations',
      headers: bearer(ADMIN_KEY),
      payload: { name: 'Initech', slug: 'initech', ownerIdentityId: founder.identityId },
    });
    expect(org.statusCode, org.body).toBe(201);
    const orgId = org.json().data.id as string;

    const owner = await operator('owner');
    const { context, page } = await signIn(owner);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: consoleOrigin });
    await page.goto(`${consoleOrigin}/console/#/webhooks`);
    await expect.poll(() => heading(page)).toBe('Webhook endpoints');
    await page.getByLabel('URL', { exact: true }).fill(sink.url);
    await page.getByLabel('Organization (optional)').selectOption({ label: 'Initech (initech)' });
    await page.getByLabel('HMAC-SHA256 and Ed25519', { exact: false }).check();
    await axeEvery(page, 'webhook creation with its choices');
    await page.getByRole('button', { name: 'Add the endpoint' }).click();

    // The secret and the public key, once, each with its Copy.
    const dialog = page.getByRole('dialog');
    const secret = await dialog.locator('#webhook-secret').textContent();
    const publicKey = await dialog.locator('#webhook-public-key').textContent();
    expect(secret).toMatch(/^whsec_/);
    expect(publicKey).toMatch(/^whpk_/);
    await axeEvery(page, 'webhook secret and public key');
    await dialog.getByRole('button', { name: 'Copy the public key' }).click();
    await expect.poll(() => dialog.getByRole('status').textContent()).toBe('Copied.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(publicKey);
    await dialog.getByRole('button', { name: 'Copy the secret' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => heading(page)).toBe(`Endpoint ${sink.url}`);
    expect(await page.locator('#webhook-secret').count()).toBe(0);

    // The endpoint as the API has it: the organization's events only, both signatures.
    const id = /#\/webhooks\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';
    const read = await admin().inject({
      method: 'GET',
      url: `/admin/v1/webhook-endpoints/${id}`,
      headers: bearer(ADMIN_KEY),
    });
    expect(read.json().data).toMatchObject({ organizationId: orgId, ed25519PublicKey: publicKey });
    const details = page.locator('dl.details');
    await expect.poll(() => details.textContent()).toContain('Initech (initech)');
    expect(await details.textContent()).toContain('HMAC-SHA256 and Ed25519');
    await expect.poll(() => page.getByText('No delivery yet.').isVisible()).toBe(true);

    // Recovery: since a day ago (the default), confirmed naming the URL; the answer's count shown,
    // and the log holds that many pending deliveries.
    await page.getByRole('button', { name: 'Recover' }).click();
    expect(await page.getByRole('dialog').textContent()).toContain(sink.url);
    await axeEvery(page, 'webhook recovery confirmation');
    await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
    const result = page.locator('#recovery-result');
    await expect.poll(() => result.textContent()).toMatch(/^[1-9]\d* deliver(y|ies) queued\.$/);
    const queued = Number.parseInt((await result.textContent()) ?? '', 10);
    const log = page.getByRole('region', { name: 'Delivery log' });
    await expect.poll(() => log.getByRole('row').count()).toBe(queued + 1);
    expect(await log.getByRole('row').nth(1).textContent()).toContain('Pending');
    await axeEvery(page, 'webhook recovered', 'webhook-recovered');
    const { rows } = await sql<{ name: string }>`
      SELECT name FROM audit_records WHERE actor = ${`operator:${owner.person.identityId}`}
        AND name IN ('webhook_endpoint.created', 'webhook_endpoint.recovered') ORDER BY seq`.execute(
      f.t.ctx.database.db,
    );
    expect(rows.map((r) => r.name)).toEqual(['webhook_endpoint.created', 'webhook_endpoint.recovered']);

    // The filter changed on the endpoint's page: the organization in force is the one chosen, and
    // choosing every organization lifts it.
    const filter = page.getByLabel('Organization (optional)');
    expect(await filter.inputValue()).toBe(orgId);
    await filter.selectOption({ label: 'Every organization' });
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => details.textContent()).not.toContain('Initech (initech)');
    const lifted = await admin().inject({
      method: 'GET',
      url: `/admin/v1/webhook-endpoints/${id}`,
      headers: bearer(ADMIN_KEY),
    });
    expect(lifted.json().data.organizationId).toBeNull();
    expect(await page.getByLabel('Organization (optional)').inputValue()).toBe('');

    // Gone again, so the next walk finds one endpoint at this URL.
    const removed = await admin().inject({
      method: 'DELETE',
      url: `/admin/v1/webhook-endpoints/${id}`,
      headers: bearer(ADMIN_KEY),
    });
    expect(removed.statusCode).toBe(204);
    await context.close();
  }, 180_000);

  it('a support operator reads both pages in French, finds no control, and the API refuses a write', async () => {
    // An endpoint with one delivered event, made by the admin API.
    const made = await admin().inject({
      method: 'POST',
      url: '/admin/v1/webhook-endpoints',
      headers: bearer(ADMIN_KEY),
      payload: { url: sink.url, description: 'CRM', eventTypes: ['identity.disabled'] },
    });
    expect(made.statusCode, made.body).toBe(201);
    const endpoint = made.json().data as { id: string };
    await disableSomeone();
    expect(await worker(f.t).runOnce()).toBe(1);

    const support = await operator('support');
    const { context, page } = await signIn(support, 'fr-FR');
    await page.getByRole('navigation').getByRole('link', { name: 'État' }).click();
    await expect.poll(() => heading(page)).toBe('État du service');
    await expect.poll(() => page.locator('#health-summary').textContent()).toContain('Tout fonctionne.');
    await axeEvery(page, 'état');
    await page.setViewportSize({ width: 375, height: 812 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByRole('navigation').getByRole('link', { name: 'Webhooks' }).click();
    await expect.poll(() => heading(page)).toBe('Points de terminaison des webhooks');
    expect(await page.getByRole('button', { name: 'Ajouter le point de terminaison' }).count()).toBe(0);
    await axeEvery(page, 'webhooks (assistance)');
    await page.getByRole('link', { name: sink.url }).click();
    await expect.poll(() => heading(page)).toBe(`Point de terminaison ${sink.url}`);
    const log = page.getByRole('region', { name: 'Journal des livraisons' });
    await expect.poll(() => log.getByRole('row').nth(1).textContent()).toContain('Livrée');
    for (const name of [
      'Désactiver',
      'Renouveler le secret',
      'Supprimer',
      'Enregistrer',
      'Renvoyer',
      'Récupérer',
    ])
      expect(await page.getByRole('button', { name }).count(), name).toBe(0);
    expect(await page.locator('#recover-since').count()).toBe(0);
    await axeEvery(page, 'point de terminaison (assistance)', 'webhook-support.fr');
    await page.setViewportSize({ width: 375, height: 812 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.setViewportSize({ width: 1280, height: 800 });

    // The page's own token, called directly: the API refuses the support operator a write.
    const refused = await page.evaluate(async (id) => {
      const s = await fetch('/console/session', { method: 'POST', credentials: 'same-origin' });
      const { data } = (await s.json()) as { data: { accessToken: string } };
      const r = await fetch(`/admin/v1/webhook-endpoints/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${data.accessToken}` },
      });
      const recovery = await fetch(`/admin/v1/webhook-endpoints/${id}/recoveries`, {
        method: 'POST',
        headers: { authorization: `Bearer ${data.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ since: new Date(Date.now() - 86_400_000).toISOString() }),
      });
      return [
        { status: r.status, code: ((await r.json()) as { code: string }).code },
        { status: recovery.status, code: ((await recovery.json()) as { code: string }).code },
      ];
    }, endpoint.id);
    expect(refused).toEqual([
      { status: 403, code: 'admin.forbidden' },
      { status: 403, code: 'admin.forbidden' },
    ]);
    await context.close();
  }, 180_000);

  it('an auditor has neither page: no link, and the addresses lead to the audit trail', async () => {
    const auditor = await operator('auditor');
    const { context, page } = await signIn(auditor);
    await expect.poll(() => heading(page)).toBe('Audit trail');
    const nav = page.getByRole('navigation');
    expect(await nav.getByRole('link', { name: 'Health' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Webhooks' }).count()).toBe(0);
    for (const hash of ['#/health', '#/webhooks']) {
      await page.goto(`${consoleOrigin}/console/${hash}`);
      await expect.poll(() => page.url()).toMatch(/#\/audit$/);
    }
    await context.close();
  }, 120_000);
});
