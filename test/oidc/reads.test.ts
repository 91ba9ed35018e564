import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import * as client from 'openid-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { countStatements, statementsOf } from '../helpers/statements.js';

/*
 * The provider's reads (docs/performance.md, "OpenID Provider reads"): userinfo and introspection
 * find the token, its grant and its account in one statement, and nothing found is kept past the
 * request. Two instances on one database: a grant revoked or a session ended on A is refused by B
 * at its very next userinfo, introspection and refresh, after B has served the same token.
 */

const basic = `Basic ${Buffer.from(`${FIRST_PARTY.id}:${FIRST_PARTY.secret}`).toString('base64')}`;

function userinfo(app: FastifyInstance, accessToken: string) {
  return app.inject({
    method: 'GET',
    url: '/oidc/userinfo',
    headers: { authorization: `Bearer ${accessToken}` },
  });
}

function introspect(app: FastifyInstance, token: string) {
  return app.inject({
    method: 'POST',
    url: '/oidc/token/introspection',
    headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
  });
}

function refresh(app: FastifyInstance, refreshToken: string) {
  return app.inject({
    method: 'POST',
    url: '/oidc/token',
    headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString(),
  });
}

describe('OpenID Provider reads: one statement, refused at once on another instance', () => {
  let f: OidcFixture;
  let b: TestApp;
  beforeAll(async () => {
    // Instances of one deployment share their configuration: the signing keys are sealed with SECRETS_KEY.
    f = await oidcFixture(
      // Ten wrong client secrets make a client wait (the last test).
      { SECRETS_KEY: randomBytes(32).toString('base64'), RATE_LIMIT_GUESSES: '10/3600' },
      !!process.env.TEST_DATABASE_URL,
    );
    b = await createTestApp({
      db: f.t.db,
      env: f.env,
      extend: countStatements,
    });
  });
  afterAll(async () => {
    await b?.close();
    await f?.close();
  });
  afterEach(async () => {
    // Logouts of the grants these tests end go out from here, not at a timer in another test.
    await f.t.ctx.oidc.sweep();
  });

  async function granted() {
    const hosted = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { scope: 'openid email' });
    const landed = await browse(f, auth.url.href, hosted.jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    return {
      ...hosted,
      config,
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token as string,
    };
  }

  it('userinfo is one statement, introspection one (with the client’s guess budget), the refresh grant three', async () => {
    const g = await granted();
    const info = await statementsOf(() => userinfo(b.app, g.accessToken));
    expect(info.result.statusCode).toBe(200);
    expect(info.result.json()).toEqual({
      sub: g.person.identityId,
      email: g.person.email,
      email_verified: true,
    });
    expect(info.statements).toHaveLength(1);

    // The client's guess budget and the token with its grant, in one.
    const active = await statementsOf(() => introspect(b.app, g.accessToken));
    expect(active.result.json()).toMatchObject({ active: true, sub: g.person.identityId });
    expect(active.statements).toHaveLength(1);
    expect(active.statements[0]).toContain('guess_budgets');

    // The guess budget with the token, its grant and account; the token consumed, the new refresh
    // token stored and its grant's end moved (one statement); the new access token stored.
    const renewed = await statementsOf(() => refresh(b.app, g.refreshToken));
    expect(renewed.result.statusCode).toBe(200);
    expect(renewed.statements).toHaveLength(3);
    expect(renewed.statements[1]).toMatch(/consumed_at/);
    expect(renewed.statements[0]).toContain('guess_budgets');
  });

  it('a grant revoked on A: B, which served its token a moment ago, refuses it at the next request', async () => {
    const g = await granted();
    expect((await userinfo(b.app, g.accessToken)).statusCode).toBe(200);
    expect((await introspect(b.app, g.accessToken)).json()).toMatchObject({ active: true });

    // The client revokes its refresh token on A: the library revokes the whole grant.
    const revoked = await f.t.app.inject({
      method: 'POST',
      url: '/oidc/token/revocation',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: g.refreshToken, token_type_hint: 'refresh_token' }).toString(),
    });
    expect(revoked.statusCode).toBe(200);

    expect((await userinfo(b.app, g.accessToken)).statusCode).toBe(401);
    expect((await introspect(b.app, g.accessToken)).json()).toEqual({ active: false });
    expect((await refresh(b.app, g.refreshToken)).json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('the session ended on A: B refuses its grant at the next userinfo, introspection and refresh', async () => {
    const g = await granted();
    expect((await userinfo(b.app, g.accessToken)).statusCode).toBe(200);
    expect((await introspect(b.app, g.accessToken)).json()).toMatchObject({ active: true });

    // The hosted session signs out on A; no sweep has run, so the grant's link is what refuses.
    const out = await fetch(`${f.origin}/api/v1/browser-session/sign-outs`, {
      method: 'POST',
      headers: { cookie: g.jar.header(), origin: f.origin },
    });
    expect(out.status).toBe(204);

    expect((await userinfo(b.app, g.accessToken)).statusCode).toBe(401);
    expect((await introspect(b.app, g.accessToken)).json()).toEqual({ active: false });
    expect((await refresh(b.app, g.refreshToken)).json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('an identifier removed or an identity disabled on A is out of the next answer on B', async () => {
    const g = await granted();
    expect((await userinfo(b.app, g.accessToken)).json()).toMatchObject({ email: g.person.email });

    // The address removed (as a removal writes it): the next answer has no email.
    await f.t.db.database.db
      .updateTable('identifiers')
      .set({ removed_at: new Date() })
      .where('identity_id', '=', g.person.identityId)
      .where('type', '=', 'email')
      .execute();
    expect((await userinfo(b.app, g.accessToken)).json()).toEqual({ sub: g.person.identityId });

    // The identity disabled (what an operator's disable writes, among its other acts): no claims.
    await f.t.db.database.db
      .updateTable('identities')
      .set({ disabled_at: new Date() })
      .where('id', '=', g.person.identityId)
      .execute();
    expect((await userinfo(b.app, g.accessToken)).statusCode).toBe(401);
    expect((await introspect(b.app, g.accessToken)).json()).toEqual({ active: false });
  });

  it('wrong client secrets counted on A hold B’s introspection and refresh, read in their one statement', async () => {
    const g = await granted();
    const wrong = `Basic ${Buffer.from(`${FIRST_PARTY.id}:not-the-secret`).toString('base64')}`;
    for (let i = 0; i < 10; i++) {
      const refused = await f.t.app.inject({
        method: 'POST',
        url: '/oidc/token/introspection',
        headers: { authorization: wrong, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: g.accessToken }).toString(),
      });
      expect(refused.statusCode).toBe(401);
    }
    // B's next requests with the right secret read A's count with the token, and wait.
    const early = await statementsOf(() => introspect(b.app, g.accessToken));
    expect(early.result.statusCode).toBe(429);
    expect(early.result.json()).toEqual({
      error: 'invalid_client',
      error_description: 'too many failed client authentications',
    });
    expect(early.statements).toHaveLength(1);
    const refreshEarly = await refresh(b.app, g.refreshToken);
    expect(refreshEarly.statusCode).toBe(429);
    expect(Number(refreshEarly.headers['retry-after'])).toBeGreaterThan(0);
    // The wait over (as its row says), the right secret is served and forgives the count.
    await f.t.db.database.db
      .updateTable('guess_budgets')
      .set({ next_attempt_at: new Date(0) })
      .execute();
    expect((await introspect(b.app, g.accessToken)).json()).toMatchObject({ active: true });
    expect(await f.t.db.database.db.selectFrom('guess_budgets').select('key').execute()).toEqual([]);
    expect((await refresh(b.app, g.refreshToken)).statusCode).toBe(200);
  });
});
