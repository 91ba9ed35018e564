import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcService } from '../../src/features/oidc/service.js';
import { ADMIN_KEY_NAME, adminEnv } from '../helpers/admin.js';
import { bearer, signIn } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedConsent,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  randomSuffix,
  rpConfig,
  startAuthorization,
  THIRD_PARTY,
} from '../helpers/oidc.js';
import { adminCall } from '../oidc/support.js';

// The OpenID Provider's events (docs/events.md): a grant given (consent page or at once for a
// first-party client), a grant ended (by its owner, an operator, the revocation endpoint, a reuse,
// the sweep after its session ended), and a signing-key rotation. Each in the transaction of its
// change, never with a token, code, secret or private key in it.

let f: OidcFixture;

beforeAll(async () => {
  f = await oidcFixture(adminEnv(), !!process.env.TEST_DATABASE_URL);
});
afterAll(async () => {
  await f?.close();
});

interface Row {
  type: string;
  actor: string | null;
  identityId: string | null;
  sessionId: string | null;
  data: Record<string, unknown>;
}

/** The events of `type` appended so far, oldest first. */
async function eventsOf(type: string): Promise<Row[]> {
  const rows = await f.t.ctx.database.db
    .selectFrom('events')
    .select(['type', 'actor', 'identity_id', 'session_id', 'data'])
    .where('type', '=', type)
    .orderBy('appended')
    .execute();
  return rows.map((r) => ({
    type: r.type,
    actor: r.actor,
    identityId: r.identity_id,
    sessionId: r.session_id,
    data: (typeof r.data === 'string' ? JSON.parse(r.data) : r.data) as Record<string, unknown>,
  }));
}

const grantEvents = async (type: 'oidc.grant.created' | 'oidc.grant.revoked', identityId: string) =>
  (await eventsOf(type)).filter((e) => e.identityId === identityId);

/** The audit records of one identity with this name. */
async function auditCount(name: string, target: string): Promise<number> {
  const rows = await f.t.ctx.database.db
    .selectFrom('audit_records')
    .select('name')
    .where('name', '=', name)
    .where('target', '=', target)
    .execute();
  return rows.length;
}

/** A code flow for `c` in a fresh browser: its tokens, the person, and the code's callback URL. */
async function codeFlow(c: { id: string; secret: string }, consent = false) {
  const { person, jar } = await hostedSignIn(f);
  const config = await rpConfig(f, c, c.id === THIRD_PARTY.id);
  const auth = await startAuthorization(f, config, {
    scope: 'openid email offline_access',
    prompt: 'consent',
  });
  let landed = await browse(f, auth.url.href, jar);
  if (consent) {
    expect(landed.page?.location).toMatch(/#\/consent\//);
    landed = await browse(f, await hostedConsent(f, jar, landed.page?.location as string), jar);
  }
  expect(landed.page, JSON.stringify(landed.page)).toBeUndefined();
  const callback = landed.callback as URL;
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: auth.verifier,
    expectedState: auth.state,
    expectedNonce: auth.nonce,
  });
  return { person, jar, config, tokens, callback, verifier: auth.verifier, state: auth.state };
}

/** Neither the tokens, the code nor a client secret appear in any event body. */
async function expectNoSecrets(values: Array<string | undefined>) {
  const all = JSON.stringify(
    await f.t.ctx.database.db.selectFrom('events').select(['data', 'actor']).execute(),
  );
  for (const v of values) if (v) expect(all).not.toContain(v);
  expect(all).not.toContain(FIRST_PARTY.secret);
  expect(all).not.toContain(THIRD_PARTY.secret);
}

describe('oidc.grant.created', () => {
  it('a consent given on the consent page: one event, actor the person, the grant as linked', async () => {
    const g = await codeFlow(THIRD_PARTY, true);
    const created = await grantEvents('oidc.grant.created', g.person.identityId);
    expect(created).toHaveLength(1);
    const [e] = created;
    expect(e.actor).toBe(g.person.identityId);
    expect(e.sessionId).toBeTypeOf('string');
    expect(e.data).toMatchObject({
      clientId: THIRD_PARTY.id,
      identityId: g.person.identityId,
      offline: true,
      endedAt: null,
      endedReason: null,
    });
    expect(String(e.data.scope).split(' ')).toEqual(
      expect.arrayContaining(['openid', 'email', 'offline_access']),
    );
    expect(Object.keys(e.data).sort()).toEqual(
      ['clientId', 'createdAt', 'endedAt', 'endedReason', 'id', 'identityId', 'offline', 'scope'].sort(),
    );
    // Written with the audit record of the same grant.
    expect(await auditCount('oidc.grant.given', g.person.identityId)).toBe(1);
    await expectNoSecrets([
      g.tokens.access_token,
      g.tokens.refresh_token,
      g.tokens.id_token,
      g.callback.searchParams.get('code') ?? undefined,
    ]);
  });

  it('a first-party grant made at once (no consent page) emits it too', async () => {
    const g = await codeFlow(FIRST_PARTY);
    const created = await grantEvents('oidc.grant.created', g.person.identityId);
    expect(created.map((e) => [e.actor, e.data.clientId])).toEqual([[g.person.identityId, FIRST_PARTY.id]]);
  });

  it('a declined consent gives no grant and emits nothing', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, THIRD_PARTY, true);
    const auth = await startAuthorization(f, config, { prompt: 'consent' });
    const landed = await browse(f, auth.url.href, jar);
    const next = await hostedConsent(f, jar, landed.page?.location as string, false);
    expect((await browse(f, next, jar)).callback?.searchParams.get('error')).toBe('access_denied');
    expect(await grantEvents('oidc.grant.created', person.identityId)).toEqual([]);
  });
});

describe('oidc.grant.revoked', () => {
  it('the person revokes the app (account API): one per live grant, actor the person', async () => {
    const g = await codeFlow(FIRST_PARTY);
    const api = await signIn(f.t.app, g.person);
    const res = await f.t.app.inject({
      method: 'POST',
      url: `/api/v1/connected-apps/${FIRST_PARTY.id}/revocations`,
      headers: bearer(api.accessToken),
    });
    expect(res.statusCode, res.body).toBe(204);
    const revoked = await grantEvents('oidc.grant.revoked', g.person.identityId);
    expect(revoked).toHaveLength(1);
    const created = await grantEvents('oidc.grant.created', g.person.identityId);
    expect(revoked[0]).toMatchObject({
      actor: g.person.identityId,
      data: { id: created[0].data.id, clientId: FIRST_PARTY.id, endedReason: 'revoked_by_owner' },
    });
    expect(revoked[0].data.endedAt).toBeTypeOf('string');
    expect(await auditCount('oidc.grant.ended', g.person.identityId)).toBe(1);
    // Nothing left to revoke: refused, and no event.
    const again = await f.t.app.inject({
      method: 'POST',
      url: `/api/v1/connected-apps/${FIRST_PARTY.id}/revocations`,
      headers: bearer(api.accessToken),
    });
    expect(again.statusCode).toBe(404);
    expect(await grantEvents('oidc.grant.revoked', g.person.identityId)).toHaveLength(1);
    // The sweep that follows finds the grant already ended: no second event.
    await f.t.ctx.oidc.sweep();
    expect(await grantEvents('oidc.grant.revoked', g.person.identityId)).toHaveLength(1);
  });

  it('the revocation endpoint ends the grant: exactly one event (the library revokes model by model), actor null', async () => {
    const g = await codeFlow(FIRST_PARTY);
    await client.tokenRevocation(g.config, g.tokens.refresh_token as string);
    const revoked = await grantEvents('oidc.grant.revoked', g.person.identityId);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      actor: null,
      data: { clientId: FIRST_PARTY.id, endedReason: 'revoked' },
    });
    expect(await auditCount('oidc.grant.ended', g.person.identityId)).toBe(1);
    await expectNoSecrets([g.tokens.refresh_token, g.tokens.access_token]);
  });

  it('an authorization code used twice ends its grant: one event', async () => {
    const g = await codeFlow(FIRST_PARTY);
    await expect(
      client.authorizationCodeGrant(g.config, g.callback, {
        pkceCodeVerifier: g.verifier,
        expectedState: g.state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
    const revoked = await grantEvents('oidc.grant.revoked', g.person.identityId);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ actor: null, data: { clientId: FIRST_PARTY.id } });
    expect(await auditCount('oidc.grant.ended', g.person.identityId)).toBe(1);
  });

  it('the sweep ends the grants of a session signed out: one event each, actor null', async () => {
    const g = await codeFlow(FIRST_PARTY);
    const api = await signIn(f.t.app, g.person);
    const out = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs/everywhere',
      headers: bearer(api.accessToken),
    });
    expect(out.statusCode, out.body).toBe(204);
    await f.t.ctx.oidc.sweep();
    const revoked = await grantEvents('oidc.grant.revoked', g.person.identityId);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ actor: null, data: { endedReason: 'session_ended' } });
    await f.t.ctx.oidc.sweep();
    expect(await grantEvents('oidc.grant.revoked', g.person.identityId)).toHaveLength(1);
  });

  it("an operator's deletion of a registered client: one per live grant, actor admin:<key name>", async () => {
    const id = `reg-${randomSuffix()}`;
    const made = await adminCall(f.t.admin!, 'POST', '/oidc-clients', {
      payload: {
        client_id: id,
        client_name: 'Registered',
        redirect_uris: [f.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        first_party: true,
      },
    });
    expect(made.statusCode, made.body).toBe(201);
    const secret = made.json().data.client_secret as string;
    const g = await codeFlow({ id, secret });
    const del = await adminCall(f.t.admin!, 'DELETE', `/oidc-clients/${id}`);
    expect(del.statusCode, del.body).toBe(204);
    const revoked = await grantEvents('oidc.grant.revoked', g.person.identityId);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      actor: `admin:${ADMIN_KEY_NAME}`,
      data: { clientId: id, endedReason: 'client_deleted' },
    });
    await expectNoSecrets([secret]);
  });
});

describe('signing_key.rotated', () => {
  it('one per new key (kid, alg, the keys it retired), never a private part, in the rotation', async () => {
    const before = await eventsOf('signing_key.rotated');
    const kids = await OidcService.rotateKeys(f.t.ctx);
    const rotated = (await eventsOf('signing_key.rotated')).slice(before.length);
    expect(rotated.map((e) => e.data.kid)).toEqual(kids);
    expect(rotated.map((e) => e.data.alg)).toEqual(['RS256', 'EdDSA']);
    for (const e of rotated) {
      expect(e.actor).toBeNull();
      expect(Object.keys(e.data).sort()).toEqual(['alg', 'createdAt', 'kid', 'retiredKids', 'use']);
      expect(e.data.retiredKids).toHaveLength(1);
      expect(JSON.stringify(e.data)).not.toMatch(/"(d|p|q|dp|dq|qi)"/);
    }
    // The keys it retired are the ones published before, by algorithm.
    const published = f.t.ctx.oidc.publicKeys();
    for (const e of rotated) {
      const old = published.find((k) => k.alg === e.data.alg);
      expect(e.data.retiredKids).toEqual([old?.kid]);
    }
  });
});
