import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dpopProof, newDpopKey } from '../helpers/dpop.js';
import { createPerson, type Person } from '../helpers/identities.js';
import {
  browse,
  CookieJar,
  hostedConsent,
  type OidcFixture,
  oidcFixture,
  signInOnPage,
} from '../helpers/oidc.js';

/*
 * RFC 8628 as a CLI does it, with plain fetch: it asks for a device code, polls the token endpoint
 * while a person types the user code on the hosted verification page of another browser, signs in
 * on the hosted pages and consents; the device then receives tokens tied to that hosted session.
 */

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const TV = { id: 'tv-app', name: 'Living Room TV' };
const CLI = { id: 'deploy-cli', secret: `c-${'z'.repeat(40)}` };
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

const clients = [
  // Public and third-party: the person sees the consent page.
  {
    client_id: TV.id,
    client_name: TV.name,
    token_endpoint_auth_method: 'none',
    grant_types: [GRANT, 'refresh_token'],
  },
  // Confidential and first-party: the device authorization endpoint authenticates it.
  {
    client_id: CLI.id,
    client_secret: CLI.secret,
    client_name: 'Deploy CLI',
    grant_types: [GRANT],
    first_party: true,
  },
  // The code flow only: the device authorization endpoint refuses it.
  {
    client_id: 'web-only',
    client_secret: `w-${'z'.repeat(40)}`,
    redirect_uris: ['http://127.0.0.1:9/callback'],
  },
];

async function fixture(env: Record<string, string> = {}) {
  return oidcFixture(
    { OIDC_CLIENTS: JSON.stringify(clients), RATE_LIMIT_ANSWERS_A_CHALLENGE: '100/60', ...env },
    !!process.env.TEST_DATABASE_URL,
  );
}

interface DeviceStart {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
}

async function start(f: OidcFixture, extra: Record<string, string> = {}): Promise<DeviceStart> {
  const res = await fetch(`${f.origin}/oidc/device/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: TV.id, scope: 'openid email', ...extra }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as DeviceStart;
}

async function poll(f: OidcFixture, deviceCode: string) {
  const res = await fetch(`${f.origin}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: GRANT, device_code: deviceCode, client_id: TV.id }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** The device waits its interval (the service's clock) before polling again. */
async function pollLater(f: OidcFixture, deviceCode: string) {
  f.t.clock.advance(5);
  return poll(f, deviceCode);
}

/** Opens the verification page in the browser of `jar`: its form's action and anti-CSRF value. */
async function openVerification(f: OidcFixture, jar: CookieJar, lang = 'en') {
  const res = await fetch(`${f.origin}/oidc/device`, {
    headers: { cookie: jar.header(), 'accept-language': lang },
  });
  jar.take(res);
  const html = await res.text();
  expect(res.status).toBe(200);
  return { html, ...formOf(html) };
}

function formOf(html: string) {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !xsrf) throw new Error(`no device form: ${html}`);
  return { action, xsrf };
}

async function post(
  f: OidcFixture,
  jar: CookieJar,
  form: { action: string },
  fields: Record<string, string>,
  lang = 'en',
) {
  const res = await fetch(new URL(form.action, f.origin), {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: jar.header(),
      'content-type': 'application/x-www-form-urlencoded',
      'accept-language': lang,
    },
    body: new URLSearchParams(fields),
  });
  jar.take(res);
  return { status: res.status, location: res.headers.get('location'), html: await res.text() };
}

/**
 * The person types the code, confirms it, signs in on the hosted pages (the sign-in page, then the
 * hosted session handed to the browser) and answers the consent page: the last page they see.
 */
async function approve(f: OidcFixture, person: Person, userCode: string, allow = true) {
  const jar = new CookieJar();
  const input = await openVerification(f, jar);
  const confirm = await post(f, jar, input, { xsrf: input.xsrf, user_code: userCode.toLowerCase() });
  expect(confirm.status).toBe(200);
  expect(confirm.html).toContain(userCode);
  expect(confirm.html).toContain(TV.name);
  const confirmed = await post(f, jar, formOf(confirm.html), {
    ...formOf(confirm.html),
    user_code: userCode,
    confirm: 'yes',
  });
  expect(confirmed.status).toBe(303);
  const signInPage = await browse(f, confirmed.location as string, jar);
  const uid = /#\/authorize\/([\w-]+)$/.exec(signInPage.page?.location ?? '')?.[1];
  expect(uid).toBeTruthy();
  await signInOnPage(f, jar, person);
  const consent = await browse(f, `/oidc/interaction/${uid}/continue`, jar);
  expect(consent.page?.location).toMatch(/#\/consent\//);
  const next = await hostedConsent(f, jar, consent.page?.location as string, allow);
  const last = await browse(f, next, jar);
  return { jar, page: last.page };
}

describe('OpenID Provider: the device authorization grant', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await fixture();
  });
  afterAll(async () => {
    await f.close();
  });

  it('polls pending, slows a fast poller, refuses a wrong code, and issues tokens after sign-in and consent', async () => {
    const person = await createPerson(f.t.ctx);
    const started = await start(f);
    expect(started.user_code).toMatch(USER_CODE);
    expect(started.verification_uri).toBe(`${f.origin}/oidc/device`);
    expect(started.verification_uri_complete).toBe(
      `${f.origin}/oidc/device?user_code=${encodeURIComponent(started.user_code)}`,
    );
    expect(started.expires_in).toBe(600);

    expect(await poll(f, started.device_code)).toMatchObject({
      status: 400,
      body: { error: 'authorization_pending' },
    });
    // Sooner than the 5-second interval: slow_down, and it moves nothing (5 s later is fine).
    expect(await poll(f, started.device_code)).toMatchObject({ status: 400, body: { error: 'slow_down' } });
    expect((await pollLater(f, started.device_code)).body.error).toBe('authorization_pending');

    // A wrong code: the page again, with its error, in the hosted style.
    const jar = new CookieJar();
    const input = await openVerification(f, jar);
    expect(input.html).toContain('Enter the code shown on your device.');
    const wrong = await post(f, jar, input, { xsrf: input.xsrf, user_code: 'BCDF-GHJK' });
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain('That code is not valid');
    expect(wrong.html).not.toContain('BCDF-GHJK');

    const { page } = await approve(f, person, started.user_code);
    expect(page?.status).toBe(200);
    expect(page?.body).toContain('You can go back to your device');

    const granted = await pollLater(f, started.device_code);
    expect(granted.status).toBe(200);
    expect(granted.body.access_token).toBeTypeOf('string');
    expect(granted.body.id_token).toBeTypeOf('string');
    expect(granted.body.refresh_token).toBeTypeOf('string');
    const info = await fetch(`${f.origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${granted.body.access_token}` },
    });
    expect(info.status).toBe(200);
    expect(await info.json()).toMatchObject({ sub: person.identityId, email: person.email });

    const linked = await f.t.ctx.database.db
      .selectFrom('oidc_grants')
      .select(['session_id', 'client_id'])
      .where('identity_id', '=', person.identityId)
      .execute();
    expect(linked).toEqual([expect.objectContaining({ client_id: TV.id })]);

    // Neither code reaches the logs (the access line names the route, never the query string).
    const logs = f.t.logs();
    expect(logs).not.toContain(started.user_code);
    expect(logs).not.toContain(started.user_code.replace('-', ''));
    expect(logs).not.toContain(started.device_code);

    // The device code is single use: presented again, it ends the grant it gave (as a code does).
    expect((await pollLater(f, started.device_code)).body.error).toBe('invalid_grant');
    const after = await fetch(`${f.origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${granted.body.access_token}` },
    });
    expect(after.status).toBe(401);
  });

  it('answers access_denied to the device when the person declines the consent', async () => {
    const person = await createPerson(f.t.ctx);
    const started = await start(f);
    const { page } = await approve(f, person, started.user_code, false);
    // The person is told on the verification page; the device hears it at its next poll.
    expect(page?.status).toBe(400);
    expect(page?.body).toContain('was cancelled');
    expect(await pollLater(f, started.device_code)).toMatchObject({
      status: 400,
      body: { error: 'access_denied' },
    });
  });

  it('answers access_denied when the person cancels on the confirmation page', async () => {
    const started = await start(f);
    const jar = new CookieJar();
    const input = await openVerification(f, jar);
    const confirm = await post(f, jar, input, { xsrf: input.xsrf, user_code: started.user_code });
    const cancelled = await post(f, jar, formOf(confirm.html), {
      ...formOf(confirm.html),
      user_code: started.user_code,
      abort: 'yes',
    });
    expect(cancelled.html).toContain('was cancelled');
    expect(await pollLater(f, started.device_code)).toMatchObject({
      status: 400,
      body: { error: 'access_denied' },
    });
  });

  it('answers expired_token once the device code has expired, and the page refuses its user code', async () => {
    const started = await start(f);
    // The library checks a device code's expiry against its own clock (Date.now), not the
    // service's injected one: the stored code's exp is moved into the past instead.
    await sql`UPDATE oidc_payloads SET payload = jsonb_set(payload, '{exp}', to_jsonb(${Math.floor(Date.now() / 1000) - 1}::int))
              WHERE kind = 'DeviceCode' AND id = ${started.device_code}`.execute(f.t.ctx.database.db);
    expect(await pollLater(f, started.device_code)).toMatchObject({
      status: 400,
      body: { error: 'expired_token' },
    });
    const jar = new CookieJar();
    const input = await openVerification(f, jar);
    const refused = await post(f, jar, input, { xsrf: input.xsrf, user_code: started.user_code });
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('That code is not valid');
  });

  it('ends the device refresh token when the hosted session signs out (one revocation)', async () => {
    const person = await createPerson(f.t.ctx);
    const started = await start(f);
    const { jar } = await approve(f, person, started.user_code);
    const granted = await pollLater(f, started.device_code);
    expect(granted.status).toBe(200);
    const refresh = (token: string) =>
      fetch(`${f.origin}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: TV.id }),
      });
    const renewed = await refresh(granted.body.refresh_token);
    expect(renewed.status).toBe(200);
    const next = ((await renewed.json()) as { refresh_token: string }).refresh_token;

    const out = await fetch(`${f.origin}/api/v1/browser-session/sign-outs`, {
      method: 'POST',
      headers: { cookie: jar.header(), origin: f.origin },
    });
    expect(out.status).toBe(204);
    const refused = await refresh(next);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('signs a TV in with DPoP-bound tokens (RFC 9449): a thief holding its refresh token without its key gets nothing', async () => {
    const person = await createPerson(f.t.ctx);
    const key = await newDpopKey();
    const tokenUrl = `${f.origin}/oidc/token`;
    const userinfoUrl = `${f.origin}/oidc/userinfo`;
    const started = await start(f);
    const tokenRequest = (body: Record<string, string>, dpop?: string) =>
      fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(dpop ? { dpop } : {}) },
        body: new URLSearchParams({ client_id: TV.id, ...body }),
      });
    const devicePoll = (dpop: string) =>
      tokenRequest({ grant_type: GRANT, device_code: started.device_code }, dpop);

    // The first proof has no server nonce: use_dpop_nonce (RFC 9449 §8). That answer comes before
    // the device code is read, so it is not a poll: the retry at once with the nonce is not slow_down.
    const challenged = await devicePoll(await dpopProof(key, 'POST', tokenUrl));
    expect(challenged.status).toBe(400);
    expect(((await challenged.json()) as { error: string }).error).toBe('use_dpop_nonce');
    let nonce = challenged.headers.get('dpop-nonce') as string;
    expect(nonce).toBeTruthy();
    const pending = await devicePoll(await dpopProof(key, 'POST', tokenUrl, { nonce }));
    expect(pending.status).toBe(400);
    expect(((await pending.json()) as { error: string }).error).toBe('authorization_pending');
    nonce = pending.headers.get('dpop-nonce') ?? nonce;

    await approve(f, person, started.user_code);
    f.t.clock.advance(5);
    const granted = await devicePoll(await dpopProof(key, 'POST', tokenUrl, { nonce }));
    const tokens = (await granted.json()) as Record<string, string>;
    expect(granted.status, JSON.stringify(tokens)).toBe(200);
    expect(tokens.token_type).toBe('DPoP');
    nonce = granted.headers.get('dpop-nonce') ?? nonce;

    // The access token works only with a proof of the key: as a Bearer token it is refused.
    const info = await fetch(userinfoUrl, {
      headers: {
        authorization: `DPoP ${tokens.access_token}`,
        dpop: await dpopProof(key, 'GET', userinfoUrl, { nonce, accessToken: tokens.access_token }),
      },
    });
    expect(info.status).toBe(200);
    expect(await info.json()).toMatchObject({ sub: person.identityId });
    const asBearer = await fetch(userinfoUrl, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(asBearer.status).toBe(401);

    // The stolen refresh token: without a proof, and with a proof of the thief's own key, refused;
    // neither spends it, and the device's own next refresh, with its key, goes through.
    const withoutProof = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(withoutProof.status).toBe(400);
    expect(((await withoutProof.json()) as { error: string }).error).toBe('invalid_grant');
    const thief = await newDpopKey();
    const thiefProof = await dpopProof(thief, 'POST', tokenUrl, { nonce });
    const withThiefKey = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      thiefProof,
    );
    expect(withThiefKey.status).toBe(400);
    expect(((await withThiefKey.json()) as { error: string }).error).toBe('invalid_grant');
    const renewed = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      await dpopProof(key, 'POST', tokenUrl, { nonce }),
    );
    const next = (await renewed.json()) as Record<string, string>;
    expect(renewed.status, JSON.stringify(next)).toBe(200);
    expect(next.token_type).toBe('DPoP');
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
  });

  it('lets exactly one of two polls at once through; the other is slow_down', async () => {
    const started = await start(f);
    f.t.clock.advance(5);
    const both = await Promise.all([poll(f, started.device_code), poll(f, started.device_code)]);
    expect(both.map((r) => r.body.error).sort()).toEqual(['authorization_pending', 'slow_down']);
  });

  it('authenticates a confidential client at the device authorization endpoint', async () => {
    const basic = Buffer.from(`${CLI.id}:${CLI.secret}`).toString('base64');
    const ok = await fetch(`${f.origin}/oidc/device/auth`, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ scope: 'openid' }),
    });
    expect(ok.status).toBe(200);
    const wrong = Buffer.from(`${CLI.id}:${'w'.repeat(42)}`).toString('base64');
    const refused = await fetch(`${f.origin}/oidc/device/auth`, {
      method: 'POST',
      headers: { authorization: `Basic ${wrong}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ scope: 'openid' }),
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_client');

    const web = Buffer.from(`web-only:w-${'z'.repeat(40)}`).toString('base64');
    const notDeclared = await fetch(`${f.origin}/oidc/device/auth`, {
      method: 'POST',
      headers: { authorization: `Basic ${web}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ scope: 'openid' }),
    });
    expect(notDeclared.status).toBe(400);
    expect(await notDeclared.json()).toEqual({
      error: 'invalid_request',
      error_description: 'urn:ietf:params:oauth:grant-type:device_code is not allowed for this client',
    });
  });

  it('serves the verification and success pages in French from Accept-Language', async () => {
    const jar = new CookieJar();
    const input = await openVerification(f, jar, 'fr-FR,fr;q=0.9,en;q=0.5');
    expect(input.html).toContain('<html lang="fr"');
    expect(input.html).toContain('Saisissez le code affiché sur votre appareil.');
    const wrong = await post(f, jar, input, { xsrf: input.xsrf, user_code: 'BCDF-GHJK' }, 'fr');
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain('Vérifiez le code affiché sur votre appareil');

    // The device's ui_locales wins over the browser's languages once its code is known.
    const started = await start(f, { ui_locales: 'fr-CA en' });
    const english = await openVerification(f, jar, 'en');
    const confirm = await post(f, jar, english, { xsrf: english.xsrf, user_code: started.user_code });
    expect(confirm.html).toContain('<html lang="fr"');
    expect(confirm.html).toContain('Vérifiez que votre appareil affiche ce code');
  });
});

describe('OpenID Provider: the device verification page per address', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await fixture({ RATE_LIMIT_ANSWERS_A_CHALLENGE: '3/60' });
  });
  afterAll(async () => {
    await f.close();
  });

  it('refuses more code guesses from one address than the limit, with a page', async () => {
    const jar = new CookieJar();
    const input = await openVerification(f, jar);
    for (let i = 0; i < 3; i++) {
      const wrong = await post(f, jar, input, { xsrf: input.xsrf, user_code: 'BCDF-GHJK' });
      expect(wrong.status).toBe(400);
      // The page renews its anti-CSRF value with each answer.
      Object.assign(input, formOf(wrong.html));
    }
    const limited = await post(f, jar, input, { xsrf: input.xsrf, user_code: 'BCDF-GHJK' }, 'fr');
    expect(limited.status).toBe(429);
    expect(limited.html).toContain('Trop de codes ont été essayés depuis votre réseau');
  });
});
