import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

/*
 * The OpenID Provider's error page (issue 46, item 2): the hosted look and brand, the request's
 * language (ui_locales, else Accept-Language), a plain sentence per error, the application's name
 * when the request named a registered one, a way back, and the protocol's code only as a small
 * reference. Everything escaped.
 */

const ORIGIN = 'https://id.example';
const REDIRECT = 'https://app.example/callback';
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({
    env: {
      PUBLIC_ORIGIN: ORIGIN,
      ACCOUNT_UI: 'on',
      BRAND_NAME: 'Acme <ID>',
      BRAND_SUPPORT_URL: 'https://help.acme.test/?a=1&b=2',
      OIDC_CLIENTS: JSON.stringify([
        {
          client_id: 'notes',
          client_secret: `n-${'x'.repeat(40)}`,
          client_name: 'Notes & <Co>',
          client_uri: 'https://app.example/home?x="1"',
          redirect_uris: [REDIRECT],
          grant_types: ['authorization_code'],
        },
        {
          client_id: 'plain',
          client_secret: `p-${'x'.repeat(40)}`,
          client_name: 'Plain',
          redirect_uris: [REDIRECT],
          grant_types: ['authorization_code'],
        },
      ]),
    },
  });
});
afterAll(async () => {
  await t?.close();
});

function authorize(params: Record<string, string>, headers: Record<string, string> = {}) {
  const query = new URLSearchParams({ response_type: 'code', scope: 'openid', ...params });
  return t.app.inject({ method: 'GET', url: `/oidc/auth?${query}`, headers });
}

/** The page's visible words, tags dropped. */
const words = (html: string) => html.replace(/<style>[\s\S]*?<\/style>/, '').replace(/<[^>]+>/g, ' ');

describe("the OpenID Provider's error page", () => {
  it('an address the application may not use: a plain French sentence, its name, the way back, the code as a reference', async () => {
    const res = await authorize(
      { client_id: 'notes', redirect_uri: 'https://evil.example/cb' },
      { 'accept-language': 'fr-FR,fr;q=0.9,en;q=0.5' },
    );
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const html = res.body;
    expect(html).toContain('<html lang="fr"');
    expect(html).toContain('<h1>Cette connexion ne peut pas continuer</h1>');
    expect(html).toContain(
      'Cette application vous a envoyé vers une adresse qu&#39;elle n&#39;a pas le droit d&#39;utiliser.',
    );
    // The application's name and address, escaped.
    expect(html).toContain('Application : Notes &amp; &lt;Co&gt;');
    expect(html).toContain('href="https://app.example/home?x=&quot;1&quot;"');
    expect(html).toContain('Retour à Notes &amp; &lt;Co&gt;');
    // The brand, escaped; the help link.
    expect(html).toContain('Acme &lt;ID&gt;');
    expect(html).toContain('href="https://help.acme.test/?a=1&amp;b=2"');
    expect(html).not.toContain('<ID>');
    expect(html).not.toContain('<Co>');
    // The code is a small reference, never the message itself; no script.
    expect(html).toContain('<p class="ref">Référence : <code>invalid_redirect_uri</code></p>');
    expect(html).not.toContain('<h1>invalid_redirect_uri');
    expect(html).not.toMatch(/<script/i);
    // Both themes, with the brand's accent.
    expect(html).toContain('@media (prefers-color-scheme:dark)');
    expect(html).toContain(`--accent:${t.config.brand.theme.dark.accent}`);
  });

  it('ui_locales wins over Accept-Language; English otherwise; the account pages are the way back when the app has no address', async () => {
    const fr = await authorize(
      { client_id: 'plain', redirect_uri: 'https://evil.example/cb', ui_locales: 'fr-CA en' },
      { 'accept-language': 'en' },
    );
    expect(fr.body).toContain('<html lang="fr"');
    expect(fr.body).toContain('Application : Plain');
    expect(fr.body).toContain(`href="${ORIGIN}/account/"`);
    expect(fr.body).toContain('Aller à votre compte');

    const en = await authorize(
      { client_id: 'plain', redirect_uri: 'https://evil.example/cb' },
      { 'accept-language': 'de' },
    );
    expect(en.body).toContain('<html lang="en"');
    expect(words(en.body)).toContain('This application sent you to an address it is not allowed to use.');
    expect(en.body).toContain('Go to your account');
  });

  it('an unknown application is not named, and what the request says is never echoed unescaped', async () => {
    const res = await authorize(
      { client_id: '<script>alert(1)</script>', redirect_uri: REDIRECT },
      { 'accept-language': 'en' },
    );
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain('<script>');
    expect(res.body).not.toContain('Application:');
    expect(words(res.body)).toContain('This application is not known here, or is not set up to sign you in.');
    expect(res.body).toContain('<code>invalid_client</code>');
  });

  it("the bridge's own refusal (a sign-out's oversized state) is the same page, in the asked language", async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/oidc/session/end?state=${'x'.repeat(2049)}`,
      headers: { 'accept-language': 'fr' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('<h1>Cette déconnexion ne peut pas continuer</h1>');
    expect(res.body).toContain('Cette application a envoyé une demande de connexion inutilisable.');
    expect(res.body).toContain('<code>invalid_request</code>');
  });
});
