import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import { bearer, signIn } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { waitForCode } from '../helpers/outbox.js';

/*
 * One revocation: every path that ends the service's sessions ends the OpenID Provider grants
 * given in them. After it, refresh answers invalid_grant, introspection active: false and
 * userinfo 401, at once; the sweep then sends the client's back-channel logout token.
 */
describe('OpenID Provider: every revocation path ends the grants', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({}, !!process.env.TEST_DATABASE_URL);
  });
  afterAll(async () => {
    await f.close();
  });

  async function granted(scope = 'openid email') {
    const hosted = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, {
      scope,
      ...(scope.includes('offline_access') ? { prompt: 'consent' } : {}),
    });
    const landed = await browse(f, auth.url.href, hosted.jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const current: { access_token: string; refresh_token?: string; id_token?: string; scope?: string } =
      tokens;
    return { ...hosted, config, tokens: current, sid: tokens.claims()?.sid as string };
  }

  async function expectEnded(g: Awaited<ReturnType<typeof granted>>) {
    await expect(client.refreshTokenGrant(g.config, g.tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await client.tokenIntrospection(g.config, g.tokens.access_token)).active).toBe(false);
    const info = await fetch(`${f.origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${g.tokens.access_token}` },
    });
    expect(info.status).toBe(401);
    await f.t.ctx.oidc.sweep();
    // This grant's logouts, whichever sweep sent them: the service's own runs every
    // OIDC_SWEEP_SECONDS and may come first on a busy machine. Exactly one, never repeated.
    const sent = f.logoutTokens.map((t) => decodeJwt(t)).filter((t) => t.sid === g.sid);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      iss: f.origin,
      aud: FIRST_PARTY.id,
      sub: g.person.identityId,
      sid: g.sid,
    });
    expect(sent[0].events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });
    expect(sent[0].nonce).toBeUndefined();
  }

  /** Sign-out everywhere, from a new API session of the grant's person. */
  async function signOutEverywhere(g: Awaited<ReturnType<typeof granted>>) {
    const api = await signIn(f.t.app, g.person);
    const res = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/everywhere',
      headers: bearer(api.accessToken),
    });
    expect(res.statusCode).toBe(204);
  }

  async function expectLive(g: Awaited<ReturnType<typeof granted>>) {
    expect((await client.tokenIntrospection(g.config, g.tokens.access_token)).active).toBe(true);
    const renewed = await client.refreshTokenGrant(g.config, g.tokens.refresh_token as string);
    g.tokens = renewed;
  }

  const hostedCookie = (g: Awaited<ReturnType<typeof granted>>) => ({
    cookie: g.jar.header(),
    origin: f.origin,
  });

  it('sign-out of the hosted session', async () => {
    const g = await granted();
    await expectLive(g);
    const res = await fetch(`${f.origin}/api/v1/browser-session/sign-outs`, {
      method: 'POST',
      headers: hostedCookie(g),
    });
    expect(res.status).toBe(204);
    await expectEnded(g);
  });

  it('sign-out everywhere', async () => {
    const g = await granted();
    await signOutEverywhere(g);
    await expectEnded(g);
  });

  it('a sweep called while another is sending a logout returns only after that logout is answered', async () => {
    const g = await granted();
    const hold = f.holdLogouts();
    await signOutEverywhere(g);
    // This sweep (or the service's own timer's) claims the grant and waits on the held endpoint.
    const first = f.t.ctx.oidc.sweep();
    expect(decodeJwt(await hold.received).sid).toBe(g.sid);
    const order: string[] = [];
    const second = f.t.ctx.oidc.sweep().then(() => order.push('second sweep returned'));
    // Time enough for a sweep that did not wait to find nothing left to claim and return.
    await new Promise((r) => setTimeout(r, 250));
    order.push('logout answered');
    hold.release();
    await Promise.all([first, second]);
    expect(order).toEqual(['logout answered', 'second sweep returned']);
    expect(f.logoutTokens.filter((t) => decodeJwt(t).sid === g.sid)).toHaveLength(1);
  });

  it("ending that device's session from another one", async () => {
    const g = await granted();
    const api = await signIn(f.t.app, g.person);
    const list = await f.t.app.inject({
      method: 'GET',
      url: '/api/v1/sessions?limit=100',
      headers: bearer(api.accessToken),
    });
    const other = (list.json().data as { id: string; current: boolean }[]).find((s) => !s.current);
    expect(other).toBeDefined();
    const res = await f.t.app.inject({
      method: 'POST',
      url: `/api/v1/sessions/${other?.id}/revocations`,
      headers: bearer(api.accessToken),
    });
    expect(res.statusCode).toBe(204);
    await expectEnded(g);
  });

  it('a password change made in another session', async () => {
    const g = await granted();
    const api = await signIn(f.t.app, g.person);
    const res = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      headers: bearer(api.accessToken),
      payload: { currentPassword: g.person.password, newPassword: 'lantern-orchard-velvet-73' },
    });
    expect(res.statusCode).toBe(204);
    await expectEnded(g);
  });

  it('a password recovery', async () => {
    const g = await granted();
    const email = { identifierType: 'email', identifier: g.person.email };
    expect(
      (await f.t.app.inject({ method: 'POST', url: '/api/v1/password-recoveries', payload: email }))
        .statusCode,
    ).toBe(201);
    const code = await waitForCode(f.t.config.dataDir, g.person.email, 1);
    const res = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries/confirmations',
      payload: { ...email, code, newPassword: 'harbour-willow-copper-58' },
    });
    expect(res.statusCode).toBe(204);
    await expectEnded(g);
  });

  it('RP-initiated logout ends the hosted session and the grant', async () => {
    const g = await granted();
    const url = client.buildEndSessionUrl(g.config, {
      id_token_hint: g.tokens.id_token as string,
      post_logout_redirect_uri: 'http://127.0.0.1:9/signed-out',
      state: 'bye',
    });
    const page = await fetch(url, { headers: { cookie: g.jar.header() } });
    g.jar.take(page);
    const html = await page.text();
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
    expect(xsrf).toBeTruthy();
    const confirm = await fetch(`${f.origin}/oidc/session/end/confirm`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: g.jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf: xsrf as string, logout: 'yes' }),
    });
    expect(confirm.status).toBe(303);
    expect(confirm.headers.get('location')).toBe('http://127.0.0.1:9/signed-out?state=bye');
    // The provider sent this grant's back-channel logout itself; the hosted session is over.
    expect(f.logoutTokens.length).toBeGreaterThan(0);
    expect(confirm.headers.getSetCookie().some((c) => c.startsWith('__Host-identity-session=;'))).toBe(true);
    const renew = await fetch(`${f.origin}/api/v1/browser-session/renewals`, {
      method: 'POST',
      headers: hostedCookie(g),
    });
    expect(renew.status).toBe(401);
    await expect(client.refreshTokenGrant(g.config, g.tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('an offline grant outlives the hosted session but not sign-out everywhere (the epoch)', async () => {
    const g = await granted('openid offline_access');
    expect(g.tokens.scope).toContain('offline_access');
    await fetch(`${f.origin}/api/v1/browser-session/sign-outs`, { method: 'POST', headers: hostedCookie(g) });
    await f.t.ctx.oidc.sweep();
    await expectLive(g);
    await signOutEverywhere(g);
    await expectEnded(g);
  });
});

describe('OpenID Provider: offline grants', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture(
      { SESSION_TTL: '86400', OIDC_OFFLINE_TTL: '864000' },
      !!process.env.TEST_DATABASE_URL,
    );
  });
  afterAll(async () => {
    await f.close();
  });

  it('live OIDC_OFFLINE_TTL from their last use, not from consent', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { scope: 'openid offline_access', prompt: 'consent' });
    const landed = await browse(f, auth.url.href, jar);
    let tokens: { refresh_token?: string } = await client.authorizationCodeGrant(
      config,
      landed.callback as URL,
      {
        pkceCodeVerifier: auth.verifier,
        expectedState: auth.state,
        expectedNonce: auth.nonce,
      },
    );
    // Used every 8 days for 24 days: past both the session (1 day) and one offline lifetime (10 days).
    for (let i = 0; i < 3; i++) {
      f.t.clock.advance(8 * 86400);
      tokens = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    }
    // Unused for longer than the offline lifetime: gone.
    f.t.clock.advance(11 * 86400);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });
});

describe('OpenID Provider: the operators’ acts end the grants', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({}, !!process.env.TEST_DATABASE_URL);
  });
  afterAll(async () => {
    await f.close();
  });

  for (const act of ['disablements', 'session-revocations', 'erasures']) {
    it(`admin ${act}`, async () => {
      const { person, jar } = await hostedSignIn(f);
      const config = await rpConfig(f, FIRST_PARTY);
      const auth = await startAuthorization(f, config);
      const landed = await browse(f, auth.url.href, jar);
      const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
        pkceCodeVerifier: auth.verifier,
        expectedState: auth.state,
        expectedNonce: auth.nonce,
      });
      const admin = f.t.admin;
      if (!admin) throw new Error('no admin listener');
      const res = await admin.inject({
        method: 'POST',
        url: `/admin/v1/identities/${person.identityId}/${act}`,
        headers: { authorization: `Bearer ${ADMIN_KEY}` },
      });
      expect(res.statusCode).toBe(204);
      await expect(client.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({
        error: 'invalid_grant',
      });
      expect((await client.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
      await f.t.ctx.oidc.sweep();
      // One logout for this grant's sid, whichever sweep sent it (the service's own may come first).
      const sid = tokens.claims()?.sid;
      expect(sid).toBeTruthy();
      expect(f.logoutTokens.filter((t) => decodeJwt(t).sid === sid)).toHaveLength(1);
    });
  }
});
