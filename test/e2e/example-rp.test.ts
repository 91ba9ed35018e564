import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { axeCheck, launchChromium, signInPage } from '../helpers/browser.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';

/*
 * The `profile` scope through the repository's own example relying party (examples/oidc-rp, run
 * unchanged as its README says, in a child process): a person sets their name and uploads a
 * picture on the account page, then signs in to the example app, which shows the name, the given
 * and family names, the language and the picture (loaded by the browser from the service) that
 * the OpenID Provider answered (issue 46, item 3: "a person has a name and a face in every app").
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'example-rp-secret-change-me-0123456789';

let t: TestApp;
let browser: Browser;
let page: Page;
let origin: string;
let rpOrigin: string;
let rp: ChildProcess | undefined;
let rpOutput = '';
let person: Person;

/** Starts examples/oidc-rp/server.ts with its documented variables; resolves once it listens. */
async function startExampleRp(port: number): Promise<void> {
  // Its default SCOPE is what is tested: none is inherited from this process.
  const { SCOPE: _inherited, ...inherited } = process.env;
  rp = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, 'examples/oidc-rp/server.ts')], {
    cwd: ROOT,
    env: {
      ...inherited,
      ISSUER: origin,
      CLIENT_ID: 'example-rp',
      CLIENT_SECRET: SECRET,
      PORT: String(port),
      BASE_URL: rpOrigin,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child = rp;
  await new Promise<void>((ready, failed) => {
    const timer = setTimeout(() => failed(new Error(`the example RP did not start: ${rpOutput}`)), 30_000);
    const read = (chunk: Buffer) => {
      rpOutput += chunk.toString();
      if (rpOutput.includes('example RP on ')) {
        clearTimeout(timer);
        ready();
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      failed(new Error(`the example RP exited (${code}): ${rpOutput}`));
    });
  });
}

beforeAll(async () => {
  const port = await freePort();
  const rpPort = await freePort();
  origin = `http://localhost:${port}`;
  rpOrigin = `http://127.0.0.1:${rpPort}`;
  t = await createTestApp({
    clock: new ManualClock(new Date()),
    env: {
      ACCOUNT_UI: 'on',
      PUBLIC_ORIGIN: origin,
      // The README's client entry, with this run's addresses.
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: 'example-rp',
          client_secret: SECRET,
          client_name: 'Example RP',
          redirect_uris: [`${rpOrigin}/callback`],
          post_logout_redirect_uris: [`${rpOrigin}/`],
          backchannel_logout_uri: `${rpOrigin}/backchannel-logout`,
          grant_types: ['authorization_code', 'refresh_token'],
          first_party: true,
        },
      ]),
    },
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  await startExampleRp(rpPort);
  person = await createPerson(t.ctx, 'grace@example.com');
  browser = await launchChromium();
  page = await (
    await browser.newContext({ locale: 'en-GB', viewport: { width: 1000, height: 800 } })
  ).newPage();
  page.setDefaultTimeout(10_000);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (rp && rp.exitCode === null) {
    const exited = new Promise((r) => rp?.once('exit', r));
    rp.kill('SIGTERM');
    await exited;
  }
  await t?.close();
});

describe('the example relying party asks for `profile`', () => {
  it('shows the name, given and family names, language and picture set on the account page', async () => {
    // The name and the picture, set on the account page.
    await page.goto(`${origin}/account/`);
    await signInPage(page, { refreshToken: (await signIn(t.app, person)).refreshToken });
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    const card = page.locator('section', {
      has: page.getByRole('heading', { name: 'Your name', exact: true }),
    });
    await card.getByLabel('Given name').fill('Grace');
    await card.getByLabel('Family name').fill('Hopper');
    await card.getByLabel('Display name').fill('Amazing Grace');
    await card.getByRole('button', { name: 'Save your name' }).click();
    await card.getByRole('status').getByText('Your name is saved.').waitFor();
    const png = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#2255aa' } })
      .png()
      .toBuffer();
    await card
      .getByLabel('Upload a picture')
      .setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: png });
    await card.getByRole('status').getByText('Your picture is saved.').waitFor();
    const uploaded = (await card.locator('#picture-avatar img').getAttribute('src')) ?? '';
    expect(uploaded.startsWith(`${origin}/api/v1/pictures/`)).toBe(true);

    // Signed in at the hosted pages already, and a first-party app: straight back to the app.
    await page.goto(`${rpOrigin}/login`);
    await page.waitForURL(`${rpOrigin}/`);
    await page.locator('#profile').waitFor();
    expect(await page.locator('h1').textContent()).toBe('Example RP');
    expect(await page.locator('main > p').first().textContent()).toBe('Signed in as Amazing Grace.');
    expect(await page.locator('#claim-name').textContent()).toBe('Amazing Grace');
    expect(await page.locator('#claim-given_name').textContent()).toBe('Grace');
    expect(await page.locator('#claim-family_name').textContent()).toBe('Hopper');
    // The language the person's pages used (en-GB's language), kept on the identity.
    expect(await page.locator('#claim-locale').textContent()).toBe('en');
    // The picture the account page shows, loaded by the browser in the app's page from the
    // service (a 256×256 square, served cross-origin).
    const picture = page.locator('#picture');
    expect(await picture.getAttribute('src')).toBe(uploaded);
    await expect
      .poll(() => picture.evaluate((el: HTMLImageElement) => (el.complete ? el.naturalWidth : 0)))
      .toBe(256);

    // What the app received, from the service: userinfo carries the `profile` claims.
    const userinfo = JSON.parse((await page.locator('#userinfo').textContent()) ?? '{}');
    expect(userinfo).toMatchObject({
      sub: person.identityId,
      email: person.email,
      name: 'Amazing Grace',
      given_name: 'Grace',
      family_name: 'Hopper',
      picture: uploaded,
      locale: 'en',
    });
    const claims = JSON.parse((await page.locator('#claims').textContent()) ?? '{}');
    expect(claims.sub).toBe(person.identityId);
    await axeCheck(page, 'the example RP, signed in');
  });

  it('a change on the account page is in the next sign-in: the display name cleared, the picture removed', async () => {
    await page.goto(`${origin}/account/#/`);
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    const card = page.locator('section', {
      has: page.getByRole('heading', { name: 'Your name', exact: true }),
    });
    await card.getByLabel('Display name').fill('');
    await card.getByRole('button', { name: 'Save your name' }).click();
    await card.getByRole('status').getByText('Your name is saved.').waitFor();
    await card.getByRole('button', { name: 'Remove your picture' }).click();
    await card.getByRole('status').getByText('Your picture is removed.').waitFor();

    await page.goto(`${rpOrigin}/login`);
    await page.waitForURL(`${rpOrigin}/`);
    await page.locator('#profile').waitFor();
    // The given and family names joined, and no picture any more.
    expect(await page.locator('#claim-name').textContent()).toBe('Grace Hopper');
    expect(await page.locator('#picture').count()).toBe(0);
    const userinfo = JSON.parse((await page.locator('#userinfo').textContent()) ?? '{}');
    expect(userinfo.picture).toBeUndefined();
    expect(userinfo).toMatchObject({ name: 'Grace Hopper', given_name: 'Grace', family_name: 'Hopper' });
  });
});
