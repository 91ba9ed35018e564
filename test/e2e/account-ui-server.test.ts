import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { CONTENT_SECURITY_POLICY } from '../../src/features/account-ui/routes.js';
import { createTestApp, type TestApp, testEnv } from '../helpers/app.js';

/**
 * The account UI's serving, without a browser: on, off and moved; its headers and caching; its
 * settings; and the configuration's refusals. (Run with the browser suite: each app built here
 * bundles the UI.)
 */
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const scriptOf = (html: string) => /src="(app\.[\w-]+\.js)"/.exec(html)?.[1] ?? '';

describe('the account UI plugin', () => {
  it('serves the page, its hashed assets and settings under the CSP; revalidates by ETag', async () => {
    t = await createTestApp({ env: { ACCOUNT_UI: 'on' } });
    const bare = await t.app.inject({ url: '/account' });
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe('/account/');
    const page = await t.app.inject({ url: '/account/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers['cache-control']).toBe('no-cache');
    const again = await t.app.inject({
      url: '/account/',
      headers: { 'if-none-match': page.headers.etag as string },
    });
    expect(again.statusCode).toBe(304);
    const script = await t.app.inject({ url: `/account/${scriptOf(page.body)}` });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(script.headers['x-content-type-options']).toBe('nosniff');
    const settings = await t.app.inject({ url: '/account/settings.json' });
    expect(settings.json()).toEqual({
      api: '/api/v1',
      passkeyRpId: '127.0.0.1',
      brand: { name: null, logoUrl: null, supportUrl: null },
      code: { length: 6, format: 'numeric' },
      authenticatorDigits: 6,
      codeLifetimeSeconds: 900,
      signInCodes: [],
      signInLinks: false,
      // No enabled SAML connection: the sign-in asks for the password at once (test/e2e/sso.test.ts).
      sso: false,
    });
    expect((await t.app.inject({ url: '/account/nothing.js' })).statusCode).toBe(404);
  });

  it('is absent when ACCOUNT_UI=off, and moves with ACCOUNT_UI_PATH', async () => {
    t = await createTestApp({ env: { ACCOUNT_UI: 'off' } });
    expect((await t.app.inject({ url: '/account/' })).statusCode).toBe(404);
    await t.close();
    t = await createTestApp({ env: { ACCOUNT_UI: 'on', ACCOUNT_UI_PATH: '/me/profile/' } });
    expect((await t.app.inject({ url: '/me/profile/' })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/account/' })).statusCode).toBe(404);
  });

  it('tells the page that passkeys are off when the service has no relying party, and its code format', async () => {
    t = await createTestApp({
      env: {
        ACCOUNT_UI: 'on',
        NODE_ENV: 'production',
        PUBLIC_ORIGIN: 'https://id.example.com',
        ARGON2_MEMORY_KIB: '19456',
        VERIFICATION_CODE_FORMAT: 'alphanumeric',
        VERIFICATION_CODE_LENGTH: '8',
        TOTP_DIGITS: '8',
        CHALLENGE_TTL: '3600',
        SIGN_IN_CODES: 'sms,email',
      },
    });
    const settings = (await t.app.inject({ url: '/account/settings.json' })).json();
    expect(settings.passkeyRpId).toBeNull();
    // The code input follows the configured codes.
    expect(settings.code).toEqual({ length: 8, format: 'alphanumeric' });
    expect(settings.authenticatorDigits).toBe(8);
    // "It expires in …" follows the configured lifetime.
    expect(settings.codeLifetimeSeconds).toBe(3600);
    // The channels that may sign in by code, as identifier types (sms: phone).
    expect(settings.signInCodes).toEqual(['phone', 'email']);
    // Their messages carry a link (SIGN_IN_LINKS, on by default).
    expect(settings.signInLinks).toBe(true);
  });

  it('refuses a path under /api/, without its final slash, or with odd characters', () => {
    for (const path of ['/api/account/', '/account', 'account/', '/acc ount/', '/']) {
      expect(() => loadConfig(testEnv({ ACCOUNT_UI_PATH: path })), path).toThrow(ConfigError);
    }
    expect(() => loadConfig(testEnv({ ACCOUNT_UI: 'maybe' }))).toThrow(/ACCOUNT_UI must be one of on, off/);
  });
});
