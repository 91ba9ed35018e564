import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson } from '../helpers/identities.js';

// Behind a trusted proxy the client is the address it forwards; any other peer is the client
// itself, whatever X-Forwarded-For it sends (contract 7, TRUST_PROXY).
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    env: { TRUST_PROXY: '10.0.0.0/8', RATE_LIMIT_PROVES_A_PASSWORD: '2/60' },
  });
});
afterAll(async () => {
  await t.close();
});

function signInFrom(email: string, password: string, peer: string, forwardedFor?: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    remoteAddress: peer,
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
    payload: { identifierType: 'email', identifier: email, password },
  });
}

async function historyAddresses(res: LightMyRequestResponse): Promise<string[]> {
  const history = await t.app.inject({
    method: 'GET',
    url: '/api/v1/sign-ins/history',
    headers: bearer(res.json().data.accessToken),
  });
  return history.json().data.map((e: { ipAddress: string }) => e.ipAddress);
}

describe('TRUST_PROXY as a list of proxies', () => {
  it("records the forwarded client behind a trusted proxy, and an untrusted peer's own address", async () => {
    const person = await createPerson(t.ctx);
    const viaProxy = await signInFrom(person.email, person.password, '10.1.2.3', '203.0.113.50');
    expect(viaProxy.statusCode, viaProxy.body).toBe(201);
    expect(await historyAddresses(viaProxy)).toEqual(['203.0.113.50']);
    t.clock.advance(1);
    const spoofed = await signInFrom(person.email, person.password, '198.51.100.1', '203.0.113.99');
    expect(spoofed.statusCode, spoofed.body).toBe(201);
    expect((await historyAddresses(spoofed))[0]).toBe('198.51.100.1');
  });

  it('gives each client behind the proxy its own bucket, and one IPv6 /64 a single one', async () => {
    const person = await createPerson(t.ctx);
    const from = (client: string) => signInFrom(person.email, person.password, '10.9.9.9', client);
    // Two per minute per client: a third from the same client is refused, another client is not.
    expect((await from('203.0.113.1')).statusCode).toBe(201);
    expect((await from('203.0.113.1')).statusCode).toBe(201);
    expect((await from('203.0.113.1')).statusCode).toBe(429);
    expect((await from('203.0.113.2')).statusCode).toBe(201);
    // Addresses of one /64 share a bucket.
    expect((await from('2001:db8:5:5::1')).statusCode).toBe(201);
    expect((await from('2001:db8:5:5::2')).statusCode).toBe(201);
    expect((await from('2001:db8:5:5:ffff::3')).statusCode).toBe(429);
    expect((await from('2001:db8:5:6::1')).statusCode).toBe(201);
  });
});
