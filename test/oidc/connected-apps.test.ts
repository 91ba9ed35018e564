import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminEnv } from '../helpers/admin.js';
import { bearer, createPerson, type Person, signIn } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  randomSuffix,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { adminCall } from './support.js';

let f: OidcFixture;

beforeAll(async () => {
  f = await oidcFixture(adminEnv());
});
afterAll(async () => {
  await f.close();
});

const list = (accessToken: string, query = '') =>
  f.t.app.inject({ method: 'GET', url: `/api/v1/connected-apps${query}`, headers: bearer(accessToken) });
const revoke = (accessToken: string, clientId: string) =>
  f.t.app.inject({
    method: 'POST',
    url: `/api/v1/connected-apps/${clientId}/revocations`,
    headers: bearer(accessToken),
  });

/** A full code flow for `c` in the browser of `person` (signed in at the hosted pages): its tokens. */
async function codeFlow(c: { id: string; secret: string }, person?: Person) {
  const { person: p, jar } = await hostedSignIn(f, person);
  const config = await rpConfig(f, c);
  const { url, verifier, state, nonce } = await startAuthorization(f, config, {
    scope: 'openid email offline_access',
    prompt: 'consent',
  });
  const landed = await browse(f, url.href, jar);
  expect(landed.page, JSON.stringify(landed.page)).toBeUndefined();
  const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
  });
  expect(tokens.refresh_token).toBeTypeOf('string');
  return { person: p, config, tokens };
}

describe('GET /api/v1/connected-apps', () => {
  it('is an empty final page for a fresh identity, and needs a session', async () => {
    const person = await createPerson(f.t.ctx);
    const grant = await signIn(f.t.app, person);
    const r = await list(grant.accessToken);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toEqual({ data: [], meta: { pageInfo: { hasNextPage: false, nextCursor: null } } });
    const anon = await f.t.app.inject({ method: 'GET', url: '/api/v1/connected-apps' });
    expect(anon.statusCode).toBe(401);
    expect(anon.json().code).toBe('identity.session_required');
  });

  it('lists an app after a code flow; revoking ends its access and its refresh token is refused', async () => {
    const { person, config, tokens } = await codeFlow(FIRST_PARTY);
    const api = await signIn(f.t.app, person);
    const r = await list(api.accessToken);
    expect(r.statusCode, r.body).toBe(200);
    const apps = r.json().data;
    expect(apps).toHaveLength(1);
    expect(apps[0]).toMatchObject({ clientId: FIRST_PARTY.id, name: 'Dashboard' });
    expect(apps[0].scopes).toEqual(expect.arrayContaining(['openid', 'email']));
    expect(Date.parse(apps[0].since)).not.toBeNaN();
    expect(r.body).not.toContain(tokens.refresh_token as string);
    expect(r.body).not.toContain(FIRST_PARTY.secret);

    // Another person sees nothing of it, and cannot revoke it.
    const stranger = await signIn(f.t.app, await createPerson(f.t.ctx));
    expect((await list(stranger.accessToken)).json().data).toEqual([]);
    expect((await revoke(stranger.accessToken, FIRST_PARTY.id)).statusCode).toBe(404);

    const del = await revoke(api.accessToken, FIRST_PARTY.id);
    expect(del.statusCode, del.body).toBe(204);
    expect(del.body).toBe('');
    await expect(client.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await list(api.accessToken)).json().data).toEqual([]);
    const again = await revoke(api.accessToken, FIRST_PARTY.id);
    expect(again.statusCode).toBe(404);
    expect(again.json().code).toBe('identity.connected_app_not_found');
  });

  it('pages with signed cursors bound to the caller', async () => {
    const person = await createPerson(f.t.ctx);
    // Two registered clients, each with a grant: two apps, one per page.
    const registered: Array<{ id: string; secret: string }> = [];
    for (const n of [1, 2]) {
      const r = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
        payload: {
          client_id: `paged-${n}-${randomSuffix()}`,
          client_name: `Paged ${n}`,
          redirect_uris: [f.redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          first_party: true,
        },
      });
      expect(r.statusCode, r.body).toBe(201);
      registered.push({ id: r.json().data.client_id, secret: r.json().data.client_secret });
    }
    for (const c of registered) {
      await codeFlow(c, person);
      f.t.clock.advance(2);
    }
    const api = await signIn(f.t.app, person);
    const first = await list(api.accessToken, '?limit=1');
    expect(first.statusCode, first.body).toBe(200);
    const p1 = first.json();
    expect(p1.data).toHaveLength(1);
    expect(p1.meta.pageInfo.hasNextPage).toBe(true);
    // Newest first.
    expect(p1.data[0]).toMatchObject({ clientId: registered[1].id, name: 'Paged 2' });
    const cursor = encodeURIComponent(p1.meta.pageInfo.nextCursor);
    const second = await list(api.accessToken, `?limit=1&after=${cursor}`);
    expect(second.json().data.map((a: { clientId: string }) => a.clientId)).toEqual([registered[0].id]);
    expect(second.json().meta.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });

    const stranger = await signIn(f.t.app, await createPerson(f.t.ctx));
    const foreign = await list(stranger.accessToken, `?limit=1&after=${cursor}`);
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().code).toBe('collection.cursor_invalid');
  });
});

describe('POST /api/v1/connected-apps/{clientId}/revocations', () => {
  it('answers 404 identity.connected_app_not_found for a client that holds nothing, known or not', async () => {
    const grant = await signIn(f.t.app, await createPerson(f.t.ctx));
    const unknown = await revoke(grant.accessToken, 'no-such-client');
    const known = await revoke(grant.accessToken, FIRST_PARTY.id);
    for (const r of [unknown, known]) {
      expect(r.statusCode).toBe(404);
      expect(r.json().code).toBe('identity.connected_app_not_found');
    }
    expect(known.body).toBe(unknown.body);
    const bad = await revoke(grant.accessToken, 'not a client id');
    expect(bad.statusCode).toBe(400);
  });
});

describe('an operator deleting a registered client', () => {
  it('ends every live grant of it: the refresh token is refused and the app is no longer listed', async () => {
    const created = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: `doomed-${randomSuffix()}`,
        client_name: 'Doomed',
        redirect_uris: [f.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        first_party: true,
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const c = {
      id: created.json().data.client_id as string,
      secret: created.json().data.client_secret as string,
    };
    const { person, config, tokens } = await codeFlow(c);
    const api = await signIn(f.t.app, person);
    expect((await list(api.accessToken)).json().data.map((a: { clientId: string }) => a.clientId)).toEqual([
      c.id,
    ]);

    const del = await adminCall(f.t.admin!, 'DELETE', `/oidc-clients/${c.id}`);
    expect(del.statusCode, del.body).toBe(204);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toBeTruthy();
    expect((await list(api.accessToken)).json().data).toEqual([]);
    const ended = await f.t.ctx.database.db
      .selectFrom('oidc_grants')
      .select(['ended_at', 'ended_reason'])
      .where('client_id', '=', c.id)
      .execute();
    expect(ended.length).toBeGreaterThanOrEqual(1);
    for (const g of ended) expect(g).toMatchObject({ ended_reason: 'client_deleted' });
  });
});
