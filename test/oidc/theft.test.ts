import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { sql } from 'kysely';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browse,
  type CookieJar,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  randomSuffix,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { adminCall } from './support.js';

/*
 * A session ended as stolen ends every grant given in it, offline ones too (docs/oidc.md, "One
 * revocation"): whoever held the hosted cookie could have minted an offline grant before the
 * replay showed the theft. Ordinary ends keep offline grants (test/oidc/revocation.test.ts).
 */
describe('OpenID Provider: a session ended as stolen ends its offline grants', () => {
  let f: OidcFixture;
  let publicClient: { id: string };
  beforeAll(async () => {
    f = await oidcFixture({}, !!process.env.TEST_DATABASE_URL);
    // A public client (no secret, as a thief's own single-page app would be) that may refresh and
    // hears back-channel logouts at the fixture's receiver.
    const port = (f.backchannel.address() as AddressInfo).port;
    publicClient = { id: `spa-${randomSuffix()}` };
    const admin = f.t.admin;
    if (!admin) throw new Error('no admin listener');
    const created = await adminCall(admin, 'POST', '/oidc-clients', {
      payload: {
        client_id: publicClient.id,
        token_endpoint_auth_method: 'none',
        redirect_uris: [f.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        backchannel_logout_uri: `http://127.0.0.1:${port}/backchannel`,
        first_party: true,
      },
    });
    expect(created.statusCode, created.body).toBe(201);
  });
  afterAll(async () => {
    await f.close();
  });

  const COOKIE = '__Host-identity-session';

  /** An offline grant for `c`, given in the hosted session the jar holds. */
  async function offlineGrant(jar: CookieJar, c: { id: string; secret?: string }) {
    const config = await rpConfig(f, c);
    const auth = await startAuthorization(f, config, { scope: 'openid offline_access', prompt: 'consent' });
    const landed = await browse(f, auth.url.href, jar);
    expect(landed.callback, landed.page?.body).toBeDefined();
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    expect(tokens.scope).toContain('offline_access');
    const sid = tokens.claims()?.sid as string;
    expect(sid).toBeTruthy();
    return {
      clientId: c.id,
      config,
      sid,
      tokens: tokens as { access_token: string; refresh_token?: string },
    };
  }
  type Grant = Awaited<ReturnType<typeof offlineGrant>>;

  const renewByCookie = (value: string) =>
    fetch(`${f.origin}/api/v1/browser-session/renewals`, {
      method: 'POST',
      headers: { cookie: `${COOKIE}=${value}`, origin: f.origin },
    });

  /**
   * The thief's replay: the hosted cookie is renewed (the owner's browser), then the value it held
   * before, now spent, is presented again (the copy). The session ends as a replay.
   */
  async function replayHostedToken(jar: CookieJar) {
    const copy = jar.cookies.get(COOKIE) as string;
    expect(copy).toBeTruthy();
    const renewed = await renewByCookie(copy);
    expect(renewed.status).toBe(201);
    jar.take(renewed);
    const replay = await renewByCookie(copy);
    expect(replay.status).toBe(401);
  }

  async function expectLive(g: Grant) {
    expect((await client.tokenIntrospection(g.config, g.tokens.access_token)).active).toBe(true);
    g.tokens = await client.refreshTokenGrant(g.config, g.tokens.refresh_token as string);
  }

  async function expectEnded(g: Grant) {
    await expect(client.refreshTokenGrant(g.config, g.tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await client.tokenIntrospection(g.config, g.tokens.access_token)).active).toBe(false);
    const info = await fetch(`${f.origin}/oidc/userinfo`, {
      headers: { authorization: `Bearer ${g.tokens.access_token}` },
    });
    expect(info.status).toBe(401);
    await f.t.ctx.oidc.sweep();
    // Exactly one logout for this grant, whichever sweep sent it (the service's own may come first).
    const sent = f.logoutTokens
      .map((t) => decodeJwt(t))
      .filter((t) => t.sid === g.sid && t.aud === g.clientId);
    expect(sent).toHaveLength(1);
    expect(sent[0].events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });
  }

  /** The grant's link as the sweep left it, and the session it was given in. */
  async function rows(g: Grant) {
    const r = await sql<{ ended_reason: string | null; revoked_reason: string | null; stolen: boolean }>`
      SELECT g.ended_reason, s.revoked_reason, s.theft_detected_at IS NOT NULL AS stolen
      FROM oidc_grants g JOIN sessions s ON s.id = g.session_id
      WHERE g.sid = ${g.sid} AND g.client_id = ${g.clientId}`.execute(f.t.ctx.database.db);
    expect(r.rows).toHaveLength(1);
    return r.rows[0];
  }

  it('a replayed hosted refresh token ends the offline grants of a confidential and a public client', async () => {
    const { jar } = await hostedSignIn(f);
    const confidential = await offlineGrant(jar, FIRST_PARTY);
    const pub = await offlineGrant(jar, publicClient);
    await expectLive(confidential);
    await expectLive(pub);
    await replayHostedToken(jar);
    await expectEnded(confidential);
    await expectEnded(pub);
    for (const g of [confidential, pub]) {
      expect(await rows(g)).toEqual({
        ended_reason: 'session_stolen',
        revoked_reason: 'refresh_token_replayed',
        stolen: true,
      });
    }
  });

  it('the replay ends only grants given in the stolen session: another session’s offline grant lives on', async () => {
    const { person, jar } = await hostedSignIn(f);
    const stolen = await offlineGrant(jar, FIRST_PARTY);
    const other = await hostedSignIn(f, person);
    const elsewhere = await offlineGrant(other.jar, FIRST_PARTY);
    await replayHostedToken(jar);
    await expectEnded(stolen);
    await expectLive(elsewhere);
    expect(f.logoutTokens.filter((t) => decodeJwt(t).sid === elsewhere.sid)).toHaveLength(0);
  });

  it('a replay detected after an ordinary sign-out still ends the offline grants of that session', async () => {
    const { jar } = await hostedSignIn(f);
    const g = await offlineGrant(jar, publicClient);
    const copy = jar.cookies.get(COOKIE) as string;
    const renewed = await renewByCookie(copy);
    expect(renewed.status).toBe(201);
    jar.take(renewed);
    // The owner signs out: an ordinary end, the offline grant survives it.
    const out = await fetch(`${f.origin}/api/v1/browser-session/sign-outs`, {
      method: 'POST',
      headers: { cookie: jar.header(), origin: f.origin },
    });
    expect(out.status).toBe(204);
    await f.t.ctx.oidc.sweep();
    await expectLive(g);
    // Then the copy of the cookie is presented: the session was stolen after all.
    expect((await renewByCookie(copy)).status).toBe(401);
    await expectEnded(g);
    // The session keeps the reason it first ended for; the theft is marked beside it.
    expect(await rows(g)).toEqual({
      ended_reason: 'session_stolen',
      revoked_reason: 'signed_out',
      stolen: true,
    });
  });
});
