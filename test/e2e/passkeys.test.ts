import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { addVirtualAuthenticator, launchChromium } from '../helpers/browser.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { freePort } from '../helpers/net.js';

/**
 * Issue 13's proof in a real browser: Debian's Chromium, driven by playwright-core, with Chrome's
 * virtual authenticator (CTAP2, internal, resident keys, user verification). A page served by this
 * test on loopback calls navigator.credentials.create / get with the service's options and posts
 * `credential.toJSON()` to the service, exactly as a team's front end would.
 *
 * The relying party is `localhost` (a secure context over plain http); the page and the API are
 * two origins on it, so the API's CORS list names the page.
 */

/** The page's helpers: each takes what it needs and returns the service's answer. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>passkeys</title><script>
async function call(api, path, body, headers) {
  const res = await fetch(api + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body ?? {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
window.register = async (api, headers, label) => {
  const options = await call(api, '/passkeys/options', {}, headers);
  if (options.status !== 201) return options;
  const credential = await navigator.credentials.create({
    publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options.body.data.options),
  });
  return call(api, '/passkeys', { credential: credential.toJSON(), label }, headers);
};
window.assertWith = async (api, optionsPath, path, headers) => {
  const options = await call(api, optionsPath, {}, headers);
  if (options.status !== 201) return options;
  const assertion = await navigator.credentials.get({
    publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options.body.data.options),
  });
  return call(api, path, { credential: assertion.toJSON() }, headers);
};
window.post = call;
</script><p>passkeys test page</p>`;

let t: TestApp;
let browser: Browser;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
let pageServer: http.Server;
let api: string;

beforeAll(async () => {
  const apiPort = await freePort();
  pageServer = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE),
  );
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  const pageOrigin = `http://localhost:${(pageServer.address() as AddressInfo).port}`;
  api = `http://localhost:${apiPort}/api/v1`;
  t = await createTestApp({
    env: {
      PUBLIC_ORIGIN: `http://localhost:${apiPort}`,
      WEBAUTHN_RP_ID: 'localhost',
      WEBAUTHN_RP_NAME: 'Identity e2e',
      WEBAUTHN_ORIGINS: pageOrigin,
      CORS_ORIGINS: pageOrigin,
    },
  });
  await t.app.listen({ host: '127.0.0.1', port: apiPort });
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(`${pageOrigin}/`);
  ({ cdp, authenticatorId } = await addVirtualAuthenticator(page));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await new Promise<void>((resolve) => (pageServer ? pageServer.close(() => resolve()) : resolve()));
});

type Answer = { status: number; body: { data?: Record<string, unknown>; code?: string } | null };

const inPage = {
  register: (headers: Record<string, string>, label: string) =>
    page.evaluate(([a, h, l]) => (window as never as { register: Function }).register(a, h, l), [
      api,
      headers,
      label,
    ] as const) as Promise<Answer>,
  assert: (optionsPath: string, path: string, headers: Record<string, string> = {}) =>
    page.evaluate(([a, o, p, h]) => (window as never as { assertWith: Function }).assertWith(a, o, p, h), [
      api,
      optionsPath,
      path,
      headers,
    ] as const) as Promise<Answer>,
  post: (path: string, headers: Record<string, string>) =>
    page.evaluate(([a, p, h]) => (window as never as { post: Function }).post(a, p, {}, h), [
      api,
      path,
      headers,
    ] as const) as Promise<Answer>,
};

describe('passkeys in Chromium with a virtual authenticator', () => {
  it('register, sign out, sign in with no identifier, step up, drop the password, sign in again, keep the last way in', async () => {
    const who = await elevatedPerson(t);

    // 1. Register a passkey on the signed-in account.
    const registered = await inPage.register(who.headers, 'Chromium');
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const passkeyId = registered.body?.data?.id as string;
    // The virtual authenticator now holds one discoverable credential for the relying party.
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });

    // 2. Sign out.
    expect(
      (await inPage.post('/sign-outs', { authorization: `Bearer ${who.grant.accessToken}` })).status,
    ).toBe(204);

    // 3. Sign in with the passkey, no identifier: a session at once (two factors).
    const signedIn = await inPage.assert('/sign-ins/passkeys/options', '/sign-ins/passkeys');
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(201);
    expect(signedIn.body?.data?.kind).toBe('session');
    const access = signedIn.body?.data?.accessToken as string;
    const bearer = { authorization: `Bearer ${access}` };

    // 4. Step up with the passkey.
    const stepUp = await inPage.assert('/step-ups/passkeys/options', '/step-ups/passkeys', bearer);
    expect(stepUp.status, JSON.stringify(stepUp.body)).toBe(201);
    const elevated = { ...bearer, 'x-elevation-token': stepUp.body?.data?.elevationToken as string };

    // 5. Remove the password: the passkey remains a way in.
    const methods = await t.app.inject({ method: 'GET', url: '/api/v1/sign-in-methods', headers: bearer });
    const password = (methods.json().data as { id: string; kind: string }[]).find(
      (m) => m.kind === 'password',
    );
    expect(password).toBeDefined();
    expect((await inPage.post(`/sign-in-methods/${password?.id}/removals`, elevated)).status).toBe(204);

    // 6. Sign in again with the passkey.
    const again = await inPage.assert('/sign-ins/passkeys/options', '/sign-ins/passkeys');
    expect(again.status, JSON.stringify(again.body)).toBe(201);

    // 7. The passkey is now the last way in: its removal is refused.
    const last = await inPage.post(`/sign-in-methods/${passkeyId}/removals`, elevated);
    expect(last.status).toBe(409);
    expect(last.body?.code).toBe('identity.last_sign_in_method');
  }, 120_000);
});
