import { exportJWK, generateKeyPair } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { ADMIN_KEY_NAME, OTHER_ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { randomSuffix } from '../helpers/oidc.js';
import { adminCall, clientCredentials } from './support.js';

const CONFIGURED = {
  client_id: 'configured-app',
  client_secret: `c-${'z'.repeat(40)}`,
  client_name: 'Configured App',
  redirect_uris: ['https://configured.example/callback'],
  grant_types: ['authorization_code', 'client_credentials'],
};

let t: TestApp;

const call = (...args: Parameters<typeof adminCall> extends [unknown, ...infer R] ? R : never) =>
  adminCall(t.admin!, ...args);

const newClient = (over: Record<string, unknown> = {}) => ({
  client_id: `svc-${randomSuffix()}`,
  client_name: 'Reporting Service',
  redirect_uris: ['https://reports.example/callback'],
  grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
  ...over,
});

async function create(over: Record<string, unknown> = {}) {
  const r = await call('POST', '/oidc-clients', { payload: newClient(over) });
  expect(r.statusCode, r.body).toBe(201);
  return { body: r.json().data, etag: String(r.headers.etag) };
}

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { OIDC_CLIENTS: JSON.stringify([CONFIGURED]) } });
});
afterAll(() => t.close());

describe('creating a client', () => {
  it('answers 201 with the secret this once; no later read, log or audit record shows it', async () => {
    const r = await call('POST', '/oidc-clients', { payload: newClient({ first_party: true }) });
    expect(r.statusCode, r.body).toBe(201);
    const created = r.json().data;
    expect(created.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({
      client_name: 'Reporting Service',
      token_endpoint_auth_method: 'client_secret_basic',
      first_party: true,
      require_pkce: true,
      backchannel_logout_uri: null,
      source: 'admin',
      created_at: t.clock.now().toISOString(),
    });
    expect(r.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(r.headers.location).toBe(`/admin/v1/oidc-clients/${created.client_id}`);

    const read = await call('GET', `/oidc-clients/${created.client_id}`);
    expect(read.statusCode).toBe(200);
    expect(read.headers.etag).toBe(r.headers.etag);
    expect(read.json().data.client_secret).toBeUndefined();
    const { client_secret: _secret, ...withoutSecret } = created;
    expect(read.json().data).toEqual(withoutSecret);

    const list = await call('GET', '/oidc-clients?limit=100');
    expect(list.body).not.toContain(created.client_secret);
    expect(t.logs()).not.toContain(created.client_secret);
    const stored = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM audit_records WHERE details::text LIKE ${`%${created.client_secret}%`}
         OR target LIKE ${`%${created.client_secret}%`}`.execute(t.ctx.database.db);
    expect(stored.rows[0].n).toBe(0);
    const row = await sql<{ metadata: unknown; secret_hash: string }>`
      SELECT metadata, secret_hash FROM oidc_clients WHERE client_id = ${created.client_id}`.execute(
      t.ctx.database.db,
    );
    expect(JSON.stringify(row.rows[0].metadata)).not.toContain(created.client_secret);
    expect(row.rows[0].secret_hash).toMatch(/^[0-9a-f]{64}$/);

    expect(
      await auditCount(t, 'admin.oidc_client.created', { actor: `admin:${ADMIN_KEY_NAME}` }),
    ).toBeGreaterThanOrEqual(1);
    const audit = await sql<{ target: string }>`
      SELECT target FROM audit_records WHERE name = 'admin.oidc_client.created'
      ORDER BY seq DESC LIMIT 1`.execute(t.ctx.database.db);
    expect(audit.rows[0].target).toBe(`oidc-client:${created.client_id}`);
  });

  it('a new client can use its secret at the token endpoint at once', async () => {
    const { body } = await create();
    const r = await clientCredentials(t.app, body.client_id, body.client_secret);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().access_token).toBeTypeOf('string');
  });

  it('a made secret survives form encoding: curl -u (sent as it is), encoded Basic and the body all work', async () => {
    const { body } = await create();
    const secret: string = body.client_secret;
    // 256 bits, base64url: nothing that RFC 6749's form encoding would change (no "+", "/", "=", "%").
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(encodeURIComponent(secret)).toBe(secret);
    const raw = Buffer.from(`${body.client_id}:${secret}`).toString('base64'); // what curl -u sends
    const asCurl = await t.app.inject({
      method: 'POST',
      url: '/oidc/token',
      headers: { authorization: `Basic ${raw}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    });
    expect(asCurl.statusCode, asCurl.body).toBe(200);
    expect((await clientCredentials(t.app, body.client_id, secret)).statusCode).toBe(200);
    const read = await call('GET', `/oidc-clients/${body.client_id}`);
    expect(read.body).not.toContain(secret);
  });

  it('a device client needs no redirect_uris, and reads back with its grant type', async () => {
    const grant = 'urn:ietf:params:oauth:grant-type:device_code';
    const { body } = await create({
      token_endpoint_auth_method: 'none',
      redirect_uris: undefined,
      grant_types: [grant, 'refresh_token'],
    });
    expect(body).toMatchObject({
      grant_types: [grant, 'refresh_token'],
      redirect_uris: [],
      response_types: [],
    });
    const read = await call('GET', `/oidc-clients/${body.client_id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json().data.grant_types).toEqual([grant, 'refresh_token']);
  });

  it('a public client gets no secret', async () => {
    const { body } = await create({
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
    });
    expect(body.client_secret).toBeNull();
    const row = await sql<{ secret_hash: string | null }>`
      SELECT secret_hash FROM oidc_clients WHERE client_id = ${body.client_id}`.execute(t.ctx.database.db);
    expect(row.rows[0].secret_hash).toBeNull();
  });

  it('refuses an id already registered or configured with 409, and writes nothing', async () => {
    const { body } = await create();
    const again = await call('POST', '/oidc-clients', { payload: newClient({ client_id: body.client_id }) });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('admin.oidc_client_exists');
    const configured = await call('POST', '/oidc-clients', {
      payload: newClient({ client_id: CONFIGURED.client_id }),
    });
    expect(configured.statusCode).toBe(409);
    expect(configured.json().code).toBe('admin.oidc_client_exists');
    expect(configured.body).toBe(again.body);
  });

  it('refuses metadata checkOidcClient refuses (422), an unknown field or a secret (400)', async () => {
    const bad = await call('POST', '/oidc-clients', {
      payload: newClient({ redirect_uris: ['ftp://x.example/cb'] }),
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({
      code: 'admin.oidc_client_invalid',
      errors: [{ location: 'body', field: 'redirect_uris' }],
    });
    const publicCc = await call('POST', '/oidc-clients', {
      payload: newClient({ token_endpoint_auth_method: 'none' }),
    });
    expect(publicCc.statusCode).toBe(422);
    for (const extra of [{ client_secret: 'x'.repeat(40) }, { software_statement: 'eyJ.x.y' }]) {
      const r = await call('POST', '/oidc-clients', { payload: newClient(extra) });
      expect(r.statusCode).toBe(400);
      expect(r.json().code).toBe('validation.failed');
      expect(r.body).not.toContain('x'.repeat(40));
    }
    const noId = await call('POST', '/oidc-clients', { payload: { client_name: 'x' } });
    expect(noId.statusCode).toBe(400);
  });

  it('is behind the operator key like every admin route', async () => {
    const r = await t.admin!.inject({ method: 'POST', url: '/admin/v1/oidc-clients', payload: newClient() });
    expect(r.statusCode).toBe(401);
    expect(r.json().code).toBe('admin.unauthorized');
    const other = await call('GET', '/oidc-clients', { key: OTHER_ADMIN_KEY });
    expect(other.statusCode).toBe(200);
  });
});

describe('listing and reading clients', () => {
  it('pages configured and registered clients together by client id, with signed cursors', async () => {
    const prefix = `list-${randomSuffix()}`;
    for (const n of [3, 1, 2]) await create({ client_id: `${prefix}-${n}` });
    const seen: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 100; i++) {
      const q: string = after ? `?limit=2&after=${encodeURIComponent(after)}` : '?limit=2';
      const r = await call('GET', `/oidc-clients${q}`);
      expect(r.statusCode, r.body).toBe(200);
      const body = r.json();
      expect(body.data.length).toBeLessThanOrEqual(2);
      seen.push(...body.data.map((c: { client_id: string }) => c.client_id));
      for (const c of body.data) expect(c.client_secret).toBeUndefined();
      expect(body.meta.pageInfo.hasNextPage).toBe(body.meta.pageInfo.nextCursor !== null);
      after = body.meta.pageInfo.nextCursor;
      if (!after) break;
    }
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toContain(CONFIGURED.client_id);
    expect(seen.filter((id) => id.startsWith(prefix))).toEqual([`${prefix}-1`, `${prefix}-2`, `${prefix}-3`]);

    const tampered = await call('GET', '/oidc-clients?after=v1.x.y.z');
    expect(tampered.statusCode).toBe(400);
    expect(tampered.json().code).toMatch(/^collection\.cursor_/);
  });

  it('answers 304 to a matching If-None-Match and 404 for an unknown client', async () => {
    const { body, etag } = await create();
    const r = await call('GET', `/oidc-clients/${body.client_id}`, { headers: { 'if-none-match': etag } });
    expect(r.statusCode).toBe(304);
    expect(r.body).toBe('');
    const missing = await call('GET', '/oidc-clients/no-such-client');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('admin.oidc_client_not_found');
  });
});

describe('a configured client', () => {
  it('is read as source configuration, without its secret, and every write is refused with 409', async () => {
    const r = await call('GET', `/oidc-clients/${CONFIGURED.client_id}`);
    expect(r.statusCode).toBe(200);
    expect(r.json().data).toMatchObject({
      client_id: CONFIGURED.client_id,
      client_name: 'Configured App',
      source: 'configuration',
      created_at: null,
    });
    expect(r.body).not.toContain(CONFIGURED.client_secret);
    // Its tag is weak: it names a representation, never a version a write could match.
    expect(String(r.headers.etag)).toMatch(/^W\//);

    const writes = [
      await call('PATCH', `/oidc-clients/${CONFIGURED.client_id}`, {
        payload: { client_name: 'Renamed' },
        headers: { 'if-match': '*' },
      }),
      await call('POST', `/oidc-clients/${CONFIGURED.client_id}/secret-rotations`),
      await call('DELETE', `/oidc-clients/${CONFIGURED.client_id}`),
    ];
    for (const w of writes) {
      expect(w.statusCode, w.body).toBe(409);
      expect(w.json().code).toBe('admin.oidc_client_configured');
    }
    // Still served with its configured secret.
    const token = await clientCredentials(t.app, CONFIGURED.client_id, CONFIGURED.client_secret);
    expect(token.statusCode, token.body).toBe(200);
  });
});

describe('changing a client', () => {
  it('needs If-Match (428), refuses a stale one (412) and a weak one, and moves the ETag', async () => {
    const { body, etag } = await create();
    const url = `/oidc-clients/${body.client_id}`;
    const none = await call('PATCH', url, { payload: { client_name: 'New name' } });
    expect(none.statusCode).toBe(428);
    expect(none.json().code).toBe('precondition.required');
    const weak = await call('PATCH', url, {
      payload: { client_name: 'New name' },
      headers: { 'if-match': `W/${etag}` },
    });
    expect(weak.statusCode).toBe(412);

    const ok = await call('PATCH', url, {
      payload: { client_name: 'New name', backchannel_logout_uri: 'http://127.0.0.1:9/bc' },
      headers: { 'if-match': etag },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().data).toMatchObject({
      client_name: 'New name',
      backchannel_logout_uri: 'http://127.0.0.1:9/bc',
    });
    expect(ok.headers.etag).not.toBe(etag);
    expect(ok.json().data.client_secret).toBeUndefined();

    const stale = await call('PATCH', url, {
      payload: { client_name: 'Other' },
      headers: { 'if-match': etag },
    });
    expect(stale.statusCode).toBe(412);
    expect(stale.json().code).toBe('precondition.failed');

    const removed = await call('PATCH', url, {
      payload: { backchannel_logout_uri: null },
      headers: { 'if-match': String(ok.headers.etag) },
    });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json().data.backchannel_logout_uri).toBeNull();
    expect(removed.json().data.client_name).toBe('New name');
    expect(await auditCount(t, 'admin.oidc_client.updated', `oidc-client:${body.client_id}`)).toBe(2);
  });

  it('a bad redirect URI answers 422 and changes nothing', async () => {
    const { body, etag } = await create();
    const url = `/oidc-clients/${body.client_id}`;
    const before = (await call('GET', url)).json().data;
    const r = await call('PATCH', url, {
      payload: {
        client_name: 'Changed',
        redirect_uris: ['https://ok.example/cb', 'https://bad.example/cb#frag'],
      },
      headers: { 'if-match': etag },
    });
    expect(r.statusCode).toBe(422);
    expect(r.json()).toMatchObject({
      code: 'admin.oidc_client_invalid',
      errors: [{ field: 'redirect_uris' }],
    });
    const after = await call('GET', url);
    expect(after.json().data).toEqual(before);
    expect(after.headers.etag).toBe(etag);
    expect(await auditCount(t, 'admin.oidc_client.updated', `oidc-client:${body.client_id}`)).toBe(0);
    // A public/confidential switch is refused too, and an unknown field is a 400.
    const toPublic = await call('PATCH', url, {
      payload: { token_endpoint_auth_method: 'none', grant_types: ['authorization_code'] },
      headers: { 'if-match': etag },
    });
    expect(toPublic.statusCode).toBe(422);
    const unknown = await call('PATCH', url, { payload: { client_id: 'x' }, headers: { 'if-match': etag } });
    expect(unknown.statusCode).toBe(400);
    const empty = await call('PATCH', url, { payload: {}, headers: { 'if-match': etag } });
    expect(empty.statusCode).toBe(400);
    const missing = await call('PATCH', '/oidc-clients/no-such-client', {
      payload: { client_name: 'x' },
      headers: { 'if-match': '*' },
    });
    expect(missing.statusCode).toBe(404);
  });
});

describe('RFC 7591 metadata through the admin API', () => {
  const RICH = {
    response_types: ['code'],
    logo_uri: 'https://cdn.reports.example/logo.png',
    client_uri: 'https://reports.example/',
    policy_uri: 'https://reports.example/privacy',
    tos_uri: 'https://reports.example/terms',
    contacts: ['ops@reports.example'],
    scope: 'openid email',
    default_max_age: 900,
    require_auth_time: true,
    userinfo_signed_response_alg: 'EdDSA',
  };

  it('stores what checkOidcClient accepts, reads it back alike, and null removes an optional field', async () => {
    const { body, etag } = await create(RICH);
    expect(body).toMatchObject({ ...RICH, jwks: null, jwks_uri: null });
    const read = await call('GET', `/oidc-clients/${body.client_id}`);
    const { client_secret: _secret, ...withoutSecret } = body;
    expect(read.json().data).toEqual(withoutSecret);
    const changed = await call('PATCH', `/oidc-clients/${body.client_id}`, {
      payload: { logo_uri: null, scope: null, default_max_age: 1200 },
      headers: { 'if-match': etag },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toMatchObject({ logo_uri: null, scope: null, default_max_age: 1200 });
    expect(changed.json().data.policy_uri).toBe(RICH.policy_uri);
  });

  it('refuses inconsistent metadata with 422 naming the field', async () => {
    for (const [over, field] of [
      [{ grant_types: ['client_credentials'], response_types: ['code'] }, 'response_types'],
      [{ scope: 'openid admin' }, 'scope'],
      [{ logo_uri: 'javascript:alert(1)' }, 'logo_uri'],
      [{ jwks_uri: 'https://reports.example/jwks.json' }, 'jwks_uri'],
      [{ token_endpoint_auth_method: 'private_key_jwt' }, 'token_endpoint_auth_method'],
    ] as const) {
      const r = await call('POST', '/oidc-clients', { payload: newClient(over) });
      expect(r.statusCode, JSON.stringify(over)).toBe(422);
      expect(r.json().errors[0].field, JSON.stringify(over)).toBe(field);
    }
  });

  it('a private_key_jwt client gets no secret, keeps its keys, and cannot turn into a secret client', async () => {
    const { publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jwks = { keys: [await exportJWK(publicKey)] };
    const { body, etag } = await create({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks,
      grant_types: ['client_credentials'],
      redirect_uris: [],
    });
    expect(body.client_secret).toBeNull();
    expect(body.jwks).toEqual(jwks);
    expect(body.response_types).toEqual([]);
    const row = await sql<{ secret_hash: string | null }>`
      SELECT secret_hash FROM oidc_clients WHERE client_id = ${body.client_id}`.execute(t.ctx.database.db);
    expect(row.rows[0].secret_hash).toBeNull();
    const turned = await call('PATCH', `/oidc-clients/${body.client_id}`, {
      payload: { token_endpoint_auth_method: 'client_secret_basic', jwks: null },
      headers: { 'if-match': etag },
    });
    expect(turned.statusCode).toBe(422);
    expect(turned.json().errors[0].field).toBe('token_endpoint_auth_method');
    const rotated = await call('POST', `/oidc-clients/${body.client_id}/secret-rotations`);
    expect(rotated.statusCode).toBe(422);
  });
});

describe('rotating the secret', () => {
  it('shows the new secret once; the old one is refused at the token endpoint at once, the new accepted', async () => {
    const { body } = await create();
    const old = body.client_secret as string;
    expect((await clientCredentials(t.app, body.client_id, old)).statusCode).toBe(200);

    const r = await call('POST', `/oidc-clients/${body.client_id}/secret-rotations`);
    expect(r.statusCode, r.body).toBe(201);
    const fresh = r.json().data.client_secret as string;
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fresh).not.toBe(old);

    const refused = await clientCredentials(t.app, body.client_id, old);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toBe('invalid_client');
    const accepted = await clientCredentials(t.app, body.client_id, fresh);
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(accepted.json().access_token).toBeTypeOf('string');

    const read = await call('GET', `/oidc-clients/${body.client_id}`);
    expect(read.body).not.toContain(fresh);
    expect(t.logs()).not.toContain(fresh);
    expect(await auditCount(t, 'admin.oidc_client.secret_rotated', `oidc-client:${body.client_id}`)).toBe(1);

    // If-Match, when sent, must name the current version; a public client has nothing to rotate.
    const stale = await call('POST', `/oidc-clients/${body.client_id}/secret-rotations`, {
      headers: { 'if-match': String(r.headers.etag).replace(/"$/, 'x"') },
    });
    expect(stale.statusCode).toBe(412);
    const pub = await create({ token_endpoint_auth_method: 'none', grant_types: ['authorization_code'] });
    const none = await call('POST', `/oidc-clients/${pub.body.client_id}/secret-rotations`);
    expect(none.statusCode).toBe(422);
  });
});

describe('deleting a client', () => {
  it('answers 204; its tokens and grants end, its consents go; audited; then 404', async () => {
    const { body } = await create();
    const token = await clientCredentials(t.app, body.client_id, body.client_secret);
    expect(token.statusCode).toBe(200);
    const r = await call('DELETE', `/oidc-clients/${body.client_id}`);
    expect(r.statusCode, r.body).toBe(204);
    expect(r.body).toBe('');
    const left = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM oidc_payloads WHERE payload->>'clientId' = ${body.client_id}`.execute(
      t.ctx.database.db,
    );
    expect(left.rows[0].n).toBe(0);
    expect((await clientCredentials(t.app, body.client_id, body.client_secret)).statusCode).toBe(401);
    expect((await call('GET', `/oidc-clients/${body.client_id}`)).statusCode).toBe(404);
    expect((await call('DELETE', `/oidc-clients/${body.client_id}`)).statusCode).toBe(404);
    expect(await auditCount(t, 'admin.oidc_client.deleted', `oidc-client:${body.client_id}`)).toBe(1);
    // The id is free again, and the new client starts with nothing of the old one.
    const again = await call('POST', '/oidc-clients', { payload: newClient({ client_id: body.client_id }) });
    expect(again.statusCode).toBe(201);
  });

  it('the audit chain still verifies after every write of this file', async () => {
    const result = await verifyChain(t.ctx.database.db, deriveKey(t.config.secretsKey, 'audit-seal'));
    expect(result).toMatchObject({ ok: true });
  });
});
