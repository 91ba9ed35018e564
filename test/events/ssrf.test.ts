import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicAddress } from '../../src/features/events/webhooks/send.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { admin, createEndpoint, deliveriesOf, type Sink, startSink, worker } from './support.js';

// The production rule (WEBHOOK_PRIVATE_ADDRESSES=refuse): https only, and every address the host
// resolves to at delivery time must be public; the check is the lookup the socket connects with.
let t: TestApp;
let sink: Sink;

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { WEBHOOK_PRIVATE_ADDRESSES: 'refuse' } });
  sink = await startSink();
});
afterAll(async () => {
  await sink?.close();
  await t?.close();
});

async function deliverTo(
  url: string,
  resolve?: (host: string) => Promise<Array<{ address: string; family: number }>>,
) {
  const e = await createEndpoint(t, { url });
  const p = await createPerson(t.ctx);
  expect((await admin(t, 'POST', `/identities/${p.identityId}/disablements`)).statusCode).toBe(204);
  await worker(t, { ...(resolve ? { resolve } : {}), timeoutMs: 1000 }).runOnce();
  const [delivery] = await deliveriesOf(t, e.id);
  await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
  return delivery;
}

describe('the address rule', () => {
  it('an http URL is refused when the endpoint is made', async () => {
    const res = await admin(t, 'POST', '/webhook-endpoints', { url: sink.url });
    expect(res.statusCode).toBe(422);
    expect(res.json().code).toBe('admin.webhook_url_refused');
  });

  it('a host name that resolves to 127.0.0.1 is refused at delivery, nothing is sent', async () => {
    const e = await createEndpoint(t, { url: `https://receiver.example.test:${sink.port}/hooks` });
    const p = await createPerson(t.ctx);
    await admin(t, 'POST', `/identities/${p.identityId}/disablements`);
    const resolved: string[] = [];
    await worker(t, {
      resolve: async (host) => {
        resolved.push(host);
        return [{ address: '127.0.0.1', family: 4 }];
      },
    }).runOnce();
    expect(resolved).toEqual(['receiver.example.test']);
    expect(sink.received).toHaveLength(0);
    expect((await deliveriesOf(t, e.id))[0]).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'address_refused',
      last_status_code: null,
    });
    await admin(t, 'DELETE', `/webhook-endpoints/${e.id}`);
  });

  it('one private address among public ones is enough to refuse', async () => {
    const d = await deliverTo(`https://mixed.example.test:${sink.port}/`, async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ]);
    expect(d.last_error).toBe('address_refused');
  });

  it('localhost by the system resolver, and address literals, are refused', async () => {
    for (const url of [
      `https://localhost:${sink.port}/`,
      `https://127.0.0.1:${sink.port}/`,
      `https://[::1]:${sink.port}/`,
      'https://169.254.169.254/latest/meta-data',
    ]) {
      expect((await deliverTo(url)).last_error, url).toBe('address_refused');
    }
    expect(sink.received).toHaveLength(0);
  });

  it('a public address passes the rule (the connection is then tried)', async () => {
    const d = await deliverTo('https://public.example.test:9/', async () => [
      { address: '93.184.216.34', family: 4 },
    ]);
    expect(d.last_error).not.toBe('address_refused');
  });

  it('which addresses are public', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
    ])
      expect(publicAddress(a), a).toBe(false);
    for (const a of ['::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::'])
      expect(publicAddress(a), a).toBe(false);
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111'])
      expect(publicAddress(a), a).toBe(true);
  });
});
