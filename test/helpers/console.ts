import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { DEFAULT_POLICY, ticketFor, totp } from '../second-factors/helpers.js';
import { ADMIN_KEY } from './admin.js';
import { launchChromium } from './browser.js';
import { bearer } from './identities.js';
import { freePort } from './net.js';
import { type OidcFixture, oidcFixture } from './oidc.js';
import { type Candidate, withAuthenticator } from './operators.js';

/** The operators' console served by a listening admin listener, with a browser (the console's e2e files). */
export interface ConsoleFixture {
  f: OidcFixture;
  browser: Browser;
  /** The admin listener's origin, where the console is served. */
  consoleOrigin: string;
  admin(): FastifyInstance;
  /** A fresh person with an authenticator, given `role` through the admin API. */
  operator(role: 'owner' | 'support' | 'auditor'): Promise<Candidate>;
  /**
   * The operator's hosted session in `page`'s browser: a password, then the authenticator's code
   * (the clock moved past the code's period after), handed over to the provider's HttpOnly cookie.
   */
  hostedSession(page: Page, c: Candidate): Promise<void>;
  /** The hosted session in a new context, then the console's sign-in from its signed-out page. */
  signIn(c: Candidate, locale?: string): Promise<{ context: BrowserContext; page: Page }>;
  close(): Promise<void>;
}

export async function startConsole(env: Record<string, string> = {}): Promise<ConsoleFixture> {
  const adminPort = await freePort();
  const consoleOrigin = `http://127.0.0.1:${adminPort}`;
  const f = await oidcFixture({ ADMIN_PORT: String(adminPort), CONSOLE_ORIGIN: consoleOrigin, ...env });
  const admin = () => {
    if (!f.t.admin) throw new Error('no admin listener');
    return f.t.admin;
  };
  await admin().listen({ port: adminPort, host: '127.0.0.1' });
  const browser = await launchChromium();

  const hostedSession = async (page: Page, c: Candidate): Promise<void> => {
    if (!c.factor) throw new Error('an operator needs a second factor');
    const ticket = await ticketFor(f.t.app, c.person);
    const done = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/second-factors',
      payload: { secondFactorTicket: ticket, code: totp(c.factor.secret, DEFAULT_POLICY, f.t.clock.now()) },
    });
    expect(done.statusCode, done.body).toBe(201);
    f.t.clock.advance(DEFAULT_POLICY.period);
    await page.goto(`${f.origin}/.well-known/openid-configuration`);
    const handed = await page.evaluate(async (refreshToken) => {
      const r = await fetch('/api/v1/browser-session', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken }),
      });
      return r.status;
    }, done.json().data.refreshToken as string);
    expect(handed).toBe(201);
  };

  return {
    f,
    browser,
    consoleOrigin,
    admin,
    async operator(role) {
      const c = await withAuthenticator(f);
      const put = await admin().inject({
        method: 'PUT',
        url: `/admin/v1/operators/${c.person.identityId}`,
        headers: bearer(ADMIN_KEY),
        payload: { role },
      });
      expect(put.statusCode, put.body).toBe(200);
      return c;
    },
    hostedSession,
    async signIn(c, locale = 'en-GB') {
      const context = await browser.newContext({ locale });
      const page = await context.newPage();
      await hostedSession(page, c);
      await page.goto(`${consoleOrigin}/console/`);
      await page.getByRole('link', { name: locale.startsWith('fr') ? 'Se connecter' : 'Sign in' }).click();
      await page.waitForURL(`${consoleOrigin}/console/`);
      return { context, page };
    },
    async close() {
      await browser.close();
      await f.close();
    },
  };
}
