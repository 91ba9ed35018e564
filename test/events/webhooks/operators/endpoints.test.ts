import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY_NAME } from '../../../helpers/admin.js';
import { createTestApp, type TestApp } from '../../../helpers/app.js';
import { auditCount } from '../../../helpers/audit.js';
import { admin, createEndpoint, type Sink, startSink } from '../../support.js';

// The operators' webhook endpoints (docs/events.md, "Endpoints"; docs/admin.md).
let t: TestApp;
let sink: Sink;
const ACTOR = { actor: `admin:${ADMIN_KEY_NAME}` };

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  sink = await startSink();
});
afterEach(async () => {
  await sink.close();
});

describe('endpoints', () => {
  it('create answers the secret once; read, list, update, disable, enable, delete never show it', async () => {
    const created = await createEndpoint(t, {
      url: sink.url,
      description: 'billing',
      eventTypes: ['identity.disabled'],
      ed25519: true,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.ed25519PublicKey).toMatch(/^whpk_/);
    const read = await admin(t, 'GET', `/webhook-endpoints/${created.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.body).not.toContain(created.secret.slice(6));
    expect(read.json().data).toMatchObject({
      description: 'billing',
      ed25519PublicKey: created.ed25519PublicKey,
    });
    const listed = await admin(t, 'GET', '/webhook-endpoints?limit=1');
    expect(listed.json().data.map((e: { id: string }) => e.id)).toEqual([created.id]);
    const patched = await admin(t, 'PATCH', `/webhook-endpoints/${created.id}`, { eventTypes: [] });
    expect(patched.json().data.eventTypes).toEqual([]);
    expect((await admin(t, 'POST', `/webhook-endpoints/${created.id}/disablements`)).statusCode).toBe(204);
    expect((await admin(t, 'GET', `/webhook-endpoints/${created.id}`)).json().data.disabledReason).toBe(
      'operator',
    );
    expect((await admin(t, 'DELETE', `/webhook-endpoints/${created.id}/disablements`)).statusCode).toBe(204);
    expect((await admin(t, 'GET', `/webhook-endpoints/${created.id}`)).json().data.disabledAt).toBeNull();
    expect((await admin(t, 'POST', '/webhook-endpoints', { url: 'ftp://x.example' })).statusCode).toBe(400);
    expect(
      (await admin(t, 'POST', '/webhook-endpoints', { url: sink.url, eventTypes: ['nope'] })).statusCode,
    ).toBe(400);
  });
});

describe('endpoints: refusals and the trail', () => {
  it('an unknown id is 404 on every route; a body with an unknown member is 400', async () => {
    const id = randomUUID();
    for (const [method, url, body] of [
      ['GET', `/webhook-endpoints/${id}`, undefined],
      ['PATCH', `/webhook-endpoints/${id}`, { description: 'x' }],
      ['DELETE', `/webhook-endpoints/${id}`, undefined],
      ['POST', `/webhook-endpoints/${id}/disablements`, undefined],
      ['DELETE', `/webhook-endpoints/${id}/disablements`, undefined],
      ['POST', `/webhook-endpoints/${id}/secret-rotations`, {}],
      ['GET', `/webhook-endpoints/${id}/deliveries`, undefined],
    ] as const) {
      const res = await admin(t, method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().code).toBe('admin.webhook_endpoint_not_found');
    }
    expect((await admin(t, 'POST', '/webhook-endpoints', { url: sink.url, secret: 'mine' })).statusCode).toBe(
      400,
    );
    expect((await admin(t, 'PATCH', `/webhook-endpoints/${id}`, {})).statusCode).toBe(400);
  });

  it('every write is audited, naming the endpoint, never its secret', async () => {
    const e = await createEndpoint(t, { url: sink.url });
    await admin(t, 'PATCH', `/webhook-endpoints/${e.id}`, { description: 'crm' });
    await admin(t, 'POST', `/webhook-endpoints/${e.id}/disablements`);
    await admin(t, 'DELETE', `/webhook-endpoints/${e.id}/disablements`);
    const rotated = (await admin(t, 'POST', `/webhook-endpoints/${e.id}/secret-rotations`, {})).json().data;
    await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
    for (const name of [
      'webhook_endpoint.created',
      'webhook_endpoint.updated',
      'webhook_endpoint.disabled',
      'webhook_endpoint.enabled',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.deleted',
    ]) {
      expect(await auditCount(t, name, e.id), name).toBe(1);
      expect(await auditCount(t, name, ACTOR), name).toBeGreaterThan(0);
    }
    const trail = (await admin(t, 'GET', '/audit-records?limit=20')).body;
    for (const secret of [e.secret, rotated.secret]) expect(trail).not.toContain(secret.slice(6, 20));
  });
});
