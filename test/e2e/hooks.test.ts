import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { newSecret } from '../../src/features/events/webhooks/signing.js';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium } from '../helpers/browser.js';
import { hookEnv, type Receiver, startReceiver } from '../helpers/hooks.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';

/*
 * A synchronous hook's refusal on the hosted sign-in page (docs/events.md, "Synchronous hooks"):
 * the deployment's message is shown as it wrote it, on an English page and a French one alike;
 * without a message, and when the hook does not answer, the page's own sentence in its language.
 */

const secret = newSecret();
let receiver: Receiver;
let t: TestApp;
let browser: Browser;
let origin: string;
let person: Person;

beforeAll(async () => {
  receiver = await startReceiver(secret);
  const port = await freePort();
  origin = `http://localhost:${port}`;
  t = await createTestApp({
    clock: new ManualClock(new Date()),
    env: { PUBLIC_ORIGIN: origin, ACCOUNT_UI: 'on', ...hookEnv(secret, receiver.url) },
  });
  await t.app.listen({ host: '127.0.0.1', port });
  person = await createPerson(t.ctx);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await receiver?.close();
});

async function signInOnPage(locale: string, heading: string, labels: [string, string], button: string) {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  await page.goto(`${origin}/account/#/sign-in`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await page.getByLabel(labels[0]).fill(person.email);
  await page.getByLabel(labels[1], { exact: true }).fill(person.password);
  await page.getByRole('button', { name: button, exact: true }).click();
  return { page, context };
}

describe('a hook refusing a sign-in on the hosted pages', () => {
  it('shows the hook’s own message, as given, in English and in French', async () => {
    receiver.reply = () => ({ json: { allow: false, message: 'Accounts are frozen during the audit.' } });
    const en = await signInOnPage('en-GB', 'Sign in', ['Email or phone number', 'Password'], 'Sign in');
    await en.page.getByRole('alert').filter({ hasText: 'Accounts are frozen during the audit.' }).waitFor();
    await en.context.close();

    const fr = await signInOnPage(
      'fr-FR',
      'Connexion',
      ['Adresse e-mail ou numéro de téléphone', 'Mot de passe'],
      'Se connecter',
    );
    await fr.page.getByRole('alert').filter({ hasText: 'Accounts are frozen during the audit.' }).waitFor();
    await fr.context.close();
  });

  it('without a message, or when the hook does not answer, the page’s own sentence', async () => {
    receiver.reply = () => ({ json: { allow: false } });
    const en = await signInOnPage('en-GB', 'Sign in', ['Email or phone number', 'Password'], 'Sign in');
    await en.page.getByRole('alert').filter({ hasText: 'This service does not allow this.' }).waitFor();
    await en.context.close();

    receiver.reply = () => 'hang';
    const fr = await signInOnPage(
      'fr-FR',
      'Connexion',
      ['Adresse e-mail ou numéro de téléphone', 'Mot de passe'],
      'Se connecter',
    );
    await fr.page
      .getByRole('alert')
      .filter({ hasText: 'Impossible de le vérifier pour le moment.' })
      .waitFor();
    await fr.context.close();
  });
});
