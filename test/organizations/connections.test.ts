import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchMetadata } from '../../src/features/organizations/connections/metadata.js';
import { ConnectionService } from '../../src/features/organizations/connections/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { TestIdp } from '../sso/idp.js';
import { adminCall, ORIGIN } from '../sso/support.js';
import { call, createOrganization, expectProblem, join, member, ORGS } from './support.js';

// Issue 47, item 1: an organization's enterprise connections (docs/sso.md, "Connections"), managed
// by members with connections:manage (owner, admin) and by operators; audited and evented.

let t: TestApp;
let idp: TestIdp;
let metadataServer: Server;
let metadataUrl: string;
let metadataBody = '';

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { PUBLIC_ORIGIN: ORIGIN } });
  idp = await TestIdp.create(t.clock.now());
  metadataServer = createServer((request, response) => {
    if (request.url === '/slow') return; // never answers
    if (request.url === '/big') {
      response.end('x'.repeat(2 * 1024 * 1024));
      return;
    }
    response.setHeader('content-type', 'application/samlmetadata+xml');
    response.end(metadataBody);
  });
  await new Promise<void>((resolve) => metadataServer.listen(0, '127.0.0.1', resolve));
  metadataUrl = `http://127.0.0.1:${(metadataServer.address() as AddressInfo).port}`;
}, 60_000);
afterAll(async () => {
  await t?.close();
  metadataServer?.closeAllConnections();
  await new Promise((resolve) => metadataServer?.close(resolve));
});

async function owned() {
  const owner = await member(t);
  const org = await createOrganization(t, owner.token);
  return { owner, org };
}

const samlBody = (extra: Record<string, unknown> = {}) => ({
  type: 'saml',
  name: 'Okta',
  saml: { metadataXml: idp.metadata() },
  ...extra,
});

async function eventsOf(orgId: string) {
  const r = await sql<{ type: string; data: Record<string, unknown> }>`
    SELECT type, data FROM events WHERE organization_id = ${orgId} AND type LIKE 'organization.connection.%'
    ORDER BY appended`.execute(t.ctx.database.db);
  return r.rows;
}

describe('connections of an organization', () => {
  it('an owner adds a SAML connection from metadata by value: 201, disabled, our SP endpoints; audited, evented', async () => {
    const { owner, org } = await owned();
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, owner.token, samlBody());
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json().data;
    expect(c).toMatchObject({
      type: 'saml',
      name: 'Okta',
      enabled: false,
      defaultRole: 'member',
      oidc: null,
      saml: {
        idpEntityId: idp.entityId,
        ssoUrl: idp.ssoUrl,
        wantEncrypted: false,
        encryptionCertificate: null,
        allowIdpInitiated: false,
        entityId: `${ORIGIN}/api/v1/sso/saml/${c.id}`,
        acsUrl: `${ORIGIN}/api/v1/sso/saml/${c.id}/acs`,
      },
    });
    expect(c.saml.signingCertificates.map((x: { certificate: string }) => x.certificate)).toEqual([
      idp.certificateBase64,
    ]);
    expect(await auditCount(t, 'organization.connection.created', c.id)).toBe(1);
    expect((await eventsOf(org.id)).map((e) => e.type)).toEqual(['organization.connection.created']);
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/connections`, owner.token);
    expect(list.json().data.map((x: { id: string }) => x.id)).toEqual([c.id]);
    const one = await call(t.app, 'GET', `${ORGS}/${org.id}/connections/${c.id}`, owner.token);
    expect(one.json().data).toEqual(c);
  });

  it('by entity id, SSO URL and certificates; rotation keeps two valid at once; enable; remove', async () => {
    const { owner, org } = await owned();
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, owner.token, {
      type: 'saml',
      name: 'Generic',
      saml: {
        idpEntityId: 'urn:idp',
        ssoUrl: 'https://idp.example/sso',
        signingCertificates: [idp.certificate],
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().data.id;
    const next = await TestIdp.create(t.clock.now(), 'next');
    const rotated = await call(t.app, 'PATCH', `${ORGS}/${org.id}/connections/${id}`, owner.token, {
      enabled: true,
      saml: { signingCertificates: [idp.certificate, next.certificateBase64] },
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.json().data.enabled).toBe(true);
    expect(rotated.json().data.saml.signingCertificates).toHaveLength(2);
    const removed = await call(t.app, 'DELETE', `${ORGS}/${org.id}/connections/${id}`, owner.token);
    expect(removed.statusCode).toBe(204);
    expect((await eventsOf(org.id)).map((e) => e.type)).toEqual([
      'organization.connection.created',
      'organization.connection.updated',
      'organization.connection.deleted',
    ]);
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${org.id}/connections/${id}`, owner.token),
      404,
      'organization.connection_not_found',
    );
  });

  it('want-encrypted makes our decryption key (sealed, never shown) and shows our certificate', async () => {
    const { owner, org } = await owned();
    const res = await call(
      t.app,
      'POST',
      `${ORGS}/${org.id}/connections`,
      owner.token,
      samlBody({
        saml: { metadataXml: idp.metadata(), wantEncrypted: true },
      }),
    );
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json().data;
    expect(c.saml.encryptionCertificate).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const row = await t.ctx.database.db
      .selectFrom('sso_connections')
      .select('sealed_decryption_key')
      .where('id', '=', c.id)
      .executeTakeFirstOrThrow();
    expect(row.sealed_decryption_key).toMatch(/^v1\./);
    expect(res.body).not.toContain('PRIVATE KEY');
    expect(res.body).not.toContain(row.sealed_decryption_key);
  });

  it('an OpenID connection: the client secret sealed, never shown', async () => {
    const { owner, org } = await owned();
    const secret = 'very-secret-client-secret-0123456789';
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, owner.token, {
      type: 'oidc',
      name: 'Entra',
      oidc: { issuer: 'https://login.example/tenant/v2.0', clientId: 'client', clientSecret: secret },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.oidc).toEqual({
      issuer: 'https://login.example/tenant/v2.0',
      clientId: 'client',
      clientSecretSet: true,
      redirectUri: `https://id.example/api/v1/sso/oidc/${res.json().data.id}/callback`,
    });
    expect(res.body).not.toContain(secret);
    const events = await eventsOf(res.json().data.organizationId);
    expect(JSON.stringify(events)).not.toContain(secret);
  });

  it.each([
    ['metadata with a DOCTYPE', { saml: { metadataXml: `<!DOCTYPE x [<!ENTITY a "b">]>${'<x/>'}` } }],
    ['metadata that is not XML', { saml: { metadataXml: 'not xml' } }],
    [
      'metadata without a Redirect SSO service',
      {
        saml: {
          metadataXml:
            '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"><md:IDPSSODescriptor/></md:EntityDescriptor>',
        },
      },
    ],
    [
      'no metadata and no entity id',
      { saml: { ssoUrl: 'https://idp.example/sso', signingCertificates: ['MIIB'] } },
    ],
    [
      'a certificate that is not one',
      {
        saml: {
          idpEntityId: 'urn:x',
          ssoUrl: 'https://idp.example/sso',
          signingCertificates: ['bm90IGEgY2VydA=='],
        },
      },
    ],
    [
      'an SSO URL that is not http(s)',
      { saml: { idpEntityId: 'urn:x', ssoUrl: 'javascript:alert(1)', signingCertificates: ['x'] } },
    ],
    ['the owner role as default role', { defaultRole: 'owner' }],
    ['an unknown default role', { defaultRole: 'nobody' }],
    ['an http metadata URL', { saml: { metadataUrl: 'http://idp.example/metadata' } }],
  ])('%s: 422 organization.connection_invalid, nothing written', async (_name, extra) => {
    const { owner, org } = await owned();
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, owner.token, samlBody(extra));
    expectProblem(res, 422, 'organization.connection_invalid');
    const rows = await t.ctx.database.db
      .selectFrom('sso_connections')
      .select('id')
      .where('organization_id', '=', org.id)
      .execute();
    expect(rows).toEqual([]);
  });

  it('a member without connections:manage: 403; not a member: 404', async () => {
    const { owner, org } = await owned();
    const plain = await member(t);
    await join(t, org.id, plain.person.identityId, 'member');
    expectProblem(
      await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, plain.token, samlBody()),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await call(t.app, 'GET', `${ORGS}/${org.id}/connections`, plain.token),
      403,
      'organization.permission_denied',
    );
    const stranger = await member(t);
    expectProblem(
      await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, stranger.token, samlBody()),
      404,
      'organization.not_found',
    );
    expect(owner).toBeTruthy();
  });

  it('an admin may add one, with a default role it may grant', async () => {
    const { org } = await owned();
    const admin = await member(t);
    await join(t, org.id, admin.person.identityId, 'admin');
    const res = await call(
      t.app,
      'POST',
      `${ORGS}/${org.id}/connections`,
      admin.token,
      samlBody({ defaultRole: 'admin' }),
    );
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe('metadata by URL', () => {
  const service = () =>
    new ConnectionService(t.ctx, (url, limits) => fetchMetadata(url, { ...limits, allowHttp: true }));

  it('is read once, now, from the URL', async () => {
    const { owner, org } = await owned();
    metadataBody = idp.metadata();
    const view = await service().create(
      { kind: 'member', identityId: owner.person.identityId },
      org.id,
      'saml',
      {
        name: 'By URL',
        saml: { metadataUrl: `${metadataUrl}/metadata` },
      },
    );
    expect(view.saml?.idpEntityId).toBe(idp.entityId);
  });

  it('past the time limit, or over 1 MiB: 503 organization.connection_metadata_unavailable, nothing written', async () => {
    const { owner, org } = await owned();
    const actor = { kind: 'member' as const, identityId: owner.person.identityId };
    const slow = new ConnectionService(
      {
        ...t.ctx,
        config: {
          ...t.ctx.config,
          organizations: { ...t.ctx.config.organizations, ssoMetadataTimeoutMs: 200 },
        },
      },
      (url, limits) => fetchMetadata(url, { ...limits, allowHttp: true }),
    );
    for (const path of ['/slow', '/big'])
      await expect(
        slow.create(actor, org.id, 'saml', { name: 'x', saml: { metadataUrl: `${metadataUrl}${path}` } }),
      ).rejects.toMatchObject({
        code: 'organization.connection_metadata_unavailable',
      });
    const rows = await t.ctx.database.db
      .selectFrom('sso_connections')
      .select('id')
      .where('organization_id', '=', org.id)
      .execute();
    expect(rows).toEqual([]);
  });
});

describe('operators', () => {
  it('list, add, change (allow IdP-initiated) and remove through the admin API, audited with the operator', async () => {
    const { org } = await owned();
    const created = await adminCall(t, 'POST', `/organizations/${org.id}/connections`, samlBody());
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id;
    const changed = await adminCall(t, 'PATCH', `/organizations/${org.id}/connections/${id}`, {
      saml: { allowIdpInitiated: true },
    });
    expect(changed.json().data.saml.allowIdpInitiated).toBe(true);
    const list = await adminCall(t, 'GET', `/organizations/${org.id}/connections`);
    expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([id]);
    expect(await auditCount(t, 'organization.connection.updated', { actor: 'admin:ops' })).toBeGreaterThan(0);
    expect((await adminCall(t, 'DELETE', `/organizations/${org.id}/connections/${id}`)).statusCode).toBe(204);
    expect(
      (await adminCall(t, 'GET', '/organizations/00000000-0000-4000-8000-000000000000/connections'))
        .statusCode,
    ).toBe(404);
  });
});
