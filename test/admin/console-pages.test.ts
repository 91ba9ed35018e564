import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../../src/features/account-ui/routes.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/*
 * The console's pages (ui/console/, docs/admin.md "The console") are served by the admin listener
 * only, under the account pages' strict CSP; the public port answers 404 for every one of them.
 */

let t: TestApp;
const admin = () => {
  if (!t.admin) throw new Error('no admin listener');
  return t.admin;
};

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(() => t.close());

/** The page's own script, style sheet and icon, as the page names them. */
async function assetsOfPage(): Promise<string[]> {
  const page = await admin().inject({ method: 'GET', url: '/console/' });
  const names = [...page.body.matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => m[1]);
  expect(names.length).toBe(3);
  return names.map((n) => `/console/${n}`);
}

describe("the console's pages", () => {
  it('are served on the admin listener without a key, under a strict CSP, never framed', async () => {
    const page = await admin().inject({ method: 'GET', url: '/console/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).toMatch(/<script type="module" src="console\.[A-Za-z0-9_-]{16}\.js">/);
    // No inline script or style: the CSP would refuse them.
    expect(page.body).not.toMatch(/<script>|<style|style="/);
    const bare = await admin().inject({ method: 'GET', url: '/console' });
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe('/console/');
    for (const url of await assetsOfPage()) {
      const r = await admin().inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(200);
      expect(r.headers['content-security-policy'], url).toBe(CONTENT_SECURITY_POLICY);
      const again = await admin().inject({
        method: 'GET',
        url,
        headers: { 'if-none-match': String(r.headers.etag) },
      });
      expect(again.statusCode, url).toBe(304);
    }
  });

  it('are not on the public port (404), nor anything else of the console', async () => {
    const urls = ['/console', '/console/', '/console/sign-in', '/console/session', ...(await assetsOfPage())];
    for (const url of urls) {
      const r = await t.app.inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(404);
    }
  });

  it('leave the rest of the admin listener behind its key', async () => {
    // Under /console only the console's own paths answer; nothing else of the listener is open.
    expect((await admin().inject({ method: 'GET', url: '/console/nothing-here' })).statusCode).toBe(404);
    expect((await admin().inject({ method: 'GET', url: '/admin/v1/identities' })).statusCode).toBe(401);
  });
});
