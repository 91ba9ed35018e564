import axeCore from 'axe-core';
import { type Browser, type CDPSession, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's Chromium (apt-get install chromium); .ci/run installs it when missing. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless Chromium as every browser suite runs it (root in CI, hence no sandbox). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/**
 * Chrome's virtual authenticator on the page: a platform authenticator (CTAP2, internal) with
 * discoverable credentials and user verification, answering every prompt by itself.
 */
export async function addVirtualAuthenticator(
  page: Page,
): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

/**
 * axe-core on the page's current state (injected through the debugging protocol: the page's CSP
 * rightly refuses it otherwise). Fails on any violation, whatever its impact (issue 27: "axe finds
 * nothing"); answers the summary line.
 */
export async function axeCheck(p: Page, name: string): Promise<string> {
  await p.evaluate(axeCore.source);
  const found = (await p.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is a global the evaluated source defines
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: { id: string; impact: string; nodes: { target: string[] }[] }) => ({
      id: v.id,
      impact: v.impact,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  })) as { id: string; impact: string; targets: string[] }[];
  expect(found, `${name}: ${JSON.stringify(found)}`).toEqual([]);
  return `${name}: 0 violations`;
}

/** The two sizes issue 46's proof asks axe at: a desktop window and a phone. */
export const AXE_SIZES = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 375, height: 812 },
} as const;

/**
 * axe on the page as it is, in every combination of theme (light, dark) and size (desktop, phone):
 * the state is reached once, then the colour scheme and the viewport are switched under it. The
 * page's own scheme and viewport are put back afterwards, so the test goes on as it was. Returns
 * one line per combination, as axeCheck does.
 */
export async function axeAllCombinations(p: Page, name: string): Promise<string[]> {
  const viewport = p.viewportSize();
  const dark = await p.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
  const lines: string[] = [];
  for (const colorScheme of ['light', 'dark'] as const) {
    await p.emulateMedia({ colorScheme });
    for (const [size, box] of Object.entries(AXE_SIZES)) {
      await p.setViewportSize(box);
      // Both took effect: the media queries the stylesheet uses answer for this combination.
      expect(await p.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches)).toBe(
        colorScheme === 'dark',
      );
      expect(await p.evaluate(() => window.innerWidth)).toBe(box.width);
      lines.push(await axeCheck(p, `${name} (${colorScheme}, ${size})`));
    }
  }
  await p.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
  if (viewport) await p.setViewportSize(viewport);
  return lines;
}

/** Who signs in: a password sign-in made by the page itself, or a grant already obtained elsewhere. */
export type PageSignIn = { email: string; password: string } | { refreshToken: string };

/**
 * Signs the page's browser context in the way the hosted sign-in form does: POST /api/v1/sign-ins
 * from inside the page (when given an email and password; the session is then the browser's own,
 * its user agent and address), then the cookie hand-over, POST /api/v1/browser-session with the
 * grant's refresh token, which sets the hosted session's HttpOnly cookie. Given a `refreshToken`
 * (e.g. from `signIn(t.app, person)`), only the hand-over runs. The page MUST already be on the
 * service's origin (any of its pages): the requests are relative and the cookie is that origin's.
 * Fails unless the hand-over answers 201. The page does not reload: load it again to see the
 * session.
 *
 * It first waits for the page's own requests to end: a signed-out account page asks
 * POST /api/v1/browser-session/renewals as it starts, and that refusal clears the cookie (every
 * refusal does, byte for byte the same). Answered after the hand-over, it would clear the cookie
 * the hand-over just set, and the next load would be signed out.
 */
export async function signInPage(page: Page, who: PageSignIn): Promise<void> {
  await page.waitForLoadState('networkidle');
  const status = await page.evaluate(async (who) => {
    let refreshToken: string;
    if ('refreshToken' in who) refreshToken = who.refreshToken;
    else {
      const grant = await fetch('/api/v1/sign-ins', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ identifierType: 'email', identifier: who.email, password: who.password }),
      });
      const { data } = await grant.json();
      refreshToken = data.refreshToken;
    }
    const handed = await fetch('/api/v1/browser-session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refreshToken }),
    });
    return handed.status;
  }, who);
  expect(status, 'POST /api/v1/browser-session').toBe(201);
}
