import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY_NAME, adminEnv, adminRequest } from '../helpers/admin.js';
import { createPerson } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';

let f: OidcFixture;

beforeAll(async () => {
  f = await oidcFixture(adminEnv());
});
afterAll(() => f.close());

const get = (url: string) => adminRequest(f.t.admin!, 'GET', url);

describe('GET /admin/v1/identities/{id}/connected-apps', () => {
  it("lists the apps holding access to the person's account, never a token or a secret; audited", async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
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

    const r = await get(`/identities/${person.identityId.toUpperCase()}/connected-apps`);
    expect(r.statusCode, r.body).toBe(200);
    const apps = r.json().data;
    expect(apps).toHaveLength(1);
    expect(apps[0]).toMatchObject({ clientId: FIRST_PARTY.id, name: 'Dashboard' });
    expect(apps[0].scopes).toEqual(expect.arrayContaining(['openid', 'email']));
    expect(r.body).not.toContain(tokens.refresh_token as string);
    expect(r.body).not.toContain(tokens.access_token);
    expect(r.body).not.toContain(FIRST_PARTY.secret);

    const audit = await get(`/audit-records?identityId=${person.identityId}&limit=5`);
    const read = audit.json().data.find((x: { name: string }) => x.name === 'admin.identity.read');
    expect(read).toEqual(
      expect.objectContaining({
        actor: `admin:${ADMIN_KEY_NAME}`,
        target: person.identityId,
        details: { view: 'connected-apps' },
      }),
    );

    // Someone else's list is empty.
    const other = await createPerson(f.t.ctx);
    const none = await get(`/identities/${other.identityId}/connected-apps`);
    expect(none.statusCode, none.body).toBe(200);
    expect(none.json()).toEqual({ data: [], meta: { pageInfo: { hasNextPage: false, nextCursor: null } } });
  });

  it('an unknown identity is 404 and writes nothing; a stray query is 400', async () => {
    const unknown = await get(`/identities/${randomUUID()}/connected-apps`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('admin.identity_not_found');
    const person = await createPerson(f.t.ctx);
    expect((await get(`/identities/${person.identityId}/connected-apps?x=1`)).statusCode).toBe(400);
  });
});
