import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { UUID_RE } from './support.js';

const SECRET = 'Sup3r-S3cret-Val!ue-7f1c9a';
const ECHO = '/api/v1/_test/echo';

let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await createTestApp({
    extend(app) {
      app.post(
        ECHO,
        {
          schema: {
            body: Type.Object(
              {
                name: Type.String({ minLength: 1, maxLength: 50 }),
                note: Type.Optional(Type.String({ maxLength: 20000 })),
                nested: Type.Optional(Type.Object({ a: Type.Integer() }, { additionalProperties: false })),
              },
              { additionalProperties: false },
            ),
          },
        },
        async (request) => ({ data: request.body }),
      );
      // Accepts any object: only the JSON parser can refuse a poisoned body here.
      app.post(
        '/api/v1/_test/any',
        { schema: { body: Type.Object({}, { additionalProperties: true }) } },
        async () => ({ data: { accepted: true } }),
      );
      app.get(
        '/api/v1/_test/query',
        {
          schema: {
            querystring: Type.Object(
              { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })) },
              { additionalProperties: false },
            ),
          },
        },
        async (request) => ({ data: request.query }),
      );
      app.get('/api/v1/_test/ok', async () => ({ data: { ok: true } }));
      app.get('/api/v1/_test/boom', async () => {
        throw new Error('secret internals SELECT * FROM x');
      });
      app.get('/api/v1/_test/refused', async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:5432 secret-host'), {
          code: 'ECONNREFUSED',
        });
      });
    },
  });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await t?.close();
});

function postJson(payload: string | object, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url: ECHO,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
}

function expectProblem(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: string,
) {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body);
  expect(body).toMatchObject({ type: `/problems/${code}`, status, code });
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  expect(typeof body.retryable).toBe('boolean');
  expect(body).not.toHaveProperty('traceId');
  expect(body).not.toHaveProperty('data');
  return body;
}

describe('caching', () => {
  it('marks every /api answer no-store: a success, a refusal and an unknown route', async () => {
    const answers = [
      await t.app.inject({ method: 'GET', url: '/api/v1/_test/query' }),
      await t.app.inject({ method: 'GET', url: '/api/v1/_test/query?limit=abc' }),
      await t.app.inject({ method: 'GET', url: '/api/v1/no-such-route' }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([200, 400, 404]);
    for (const r of answers) expect(r.headers['cache-control']).toBe('no-store');
  });

  it('marks an /api answer no-store however its path is percent-encoded', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const encodings = [
      '/%61pi/v1/session/context',
      '/%61%70%69/v1/session/context',
      '/api/v1/%73ession/context',
    ];
    for (const url of encodings) {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(grant.accessToken) });
      // Routed to the handler (it answers the grant's context) or refused as no route: never cacheable.
      expect([200, 404], url).toContain(res.statusCode);
      expect(res.headers['cache-control'], url).toBe('no-store');
    }
    const routed = await t.app.inject({
      method: 'GET',
      url: encodings[0],
      headers: bearer(grant.accessToken),
    });
    expect(routed.statusCode).toBe(200);
  });

  it('marks an answer the router refuses no-store, and leaves a route outside /api to itself', async () => {
    // A malformed percent-encoding never reaches a route or a hook (Fastify's frameworkErrors).
    const malformed = await t.app.inject({ method: 'GET', url: '/api/v1/%E0%A4%A' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(malformed.headers['cache-control']).toBe('no-store');
    expect(malformed.headers['x-request-id']).toMatch(UUID_RE);
    const live = await t.app.inject({ method: 'GET', url: '/health/live' });
    expect(live.statusCode).toBe(200);
    expect(live.headers['cache-control']).toBeUndefined();
    expect(live.headers['x-request-id']).toMatch(UUID_RE);
  });
});

describe('unknown routes and versioning', () => {
  const paths = [
    '/nope',
    '/sign-ups',
    '/api/sign-ups',
    '/api/v2/sign-ups',
    '/api/v1/nope',
    '/api',
    '/api/v1',
  ];

  it('answers 404 route.not_found with byte-identical Problem Details', async () => {
    const bodies = new Set<string>();
    for (const url of paths) {
      for (const method of ['GET', 'POST'] as const) {
        const res = await t.app.inject({ method, url });
        expectProblem(res, 404, 'route.not_found');
        expect(res.json().retryable).toBe(false);
        bodies.add(res.body);
      }
    }
    expect(bodies.size).toBe(1);
  });

  it('answers 404 over real HTTP too', async () => {
    const res = await fetch(`${base}/api/v2/sign-ups`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const inj = await t.app.inject({ method: 'GET', url: '/sign-ups' });
    expect(await res.text()).toBe(inj.body);
  });
});

describe('request bodies', () => {
  it('accepts a valid JSON body', async () => {
    const res = await postJson({ name: 'x' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { name: 'x' } });
  });

  it('413 request.body_too_large above 16 KiB', async () => {
    const res = await postJson({ name: 'x', note: 'a'.repeat(17 * 1024) });
    expectProblem(res, 413, 'request.body_too_large');
    // Just under the limit is still accepted (the schema refuses the long note, not the transport).
    const under = await postJson({ name: 'x', note: 'a'.repeat(16 * 1024 - 40) });
    expect(under.statusCode).toBe(200);
  });

  it('413 over real HTTP with a chunked body', async () => {
    const status = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = httpRequest(`${base}${ECHO}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }),
        );
      });
      req.on('error', reject);
      req.write(`{"name":"x","note":"`);
      for (let i = 0; i < 20; i++) req.write('a'.repeat(1024));
      req.end('"}');
    });
    expect(status.status).toBe(413);
    expect(status.type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(status.body).code).toBe('request.body_too_large');
  });

  it('415 request.unsupported_media_type for text/plain', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: ECHO,
      headers: { 'content-type': 'text/plain' },
      payload: '{"name":"x"}',
    });
    expectProblem(res, 415, 'request.unsupported_media_type');
  });

  it('415 for a body without a content type', async () => {
    const res = await fetch(`${base}${ECHO}`, {
      method: 'POST',
      body: new Uint8Array(Buffer.from('{"name":"x"}')),
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.status).toBe(415);
    expect((await res.json()).code).toBe('request.unsupported_media_type');
  });

  it('415 for form-encoded bodies', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: ECHO,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=x',
    });
    expectProblem(res, 415, 'request.unsupported_media_type');
  });

  it('400 validation.failed for malformed JSON', async () => {
    for (const payload of ['{"name": "x"', '{name: x}', 'null', '']) {
      const res = await postJson(payload);
      const body = expectProblem(res, 400, 'validation.failed');
      expect(body.retryable).toBe(false);
    }
  });

  it('400 validation.failed for prototype poisoning', async () => {
    for (const payload of [
      `{"name":"x","__proto__":{"isAdmin":true}}`,
      `{"name":"x","constructor":{"prototype":{"isAdmin":true}}}`,
      `{"nested":{"__proto__":{"a":1}},"name":"x"}`,
    ]) {
      for (const url of [ECHO, '/api/v1/_test/any']) {
        const res = await t.app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json' },
          payload,
        });
        expectProblem(res, 400, 'validation.failed');
        expect(res.body).not.toContain('isAdmin');
      }
    }
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    // The permissive route itself works, so the refusals above come from the parser.
    const ok = await t.app.inject({
      method: 'POST',
      url: '/api/v1/_test/any',
      headers: { 'content-type': 'application/json' },
      payload: '{"extra":{"prototype":1}}',
    });
    expect(ok.statusCode).toBe(200);
  });

  it('400 for an unknown property with entries that never echo the value', async () => {
    const res = await postJson({ name: 'x', password: SECRET });
    const body = expectProblem(res, 400, 'validation.failed');
    expect(Array.isArray(body.errors)).toBe(true);
    expect(body.errors.length).toBeGreaterThan(0);
    for (const e of body.errors) {
      expect(Object.keys(e).sort()).toEqual(['code', 'field', 'location', 'message']);
      for (const v of Object.values(e)) expect(typeof v).toBe('string');
    }
    expect(body.errors).toContainEqual(
      expect.objectContaining({ location: 'body', field: 'password', code: 'additionalProperties' }),
    );
    expect(res.body).not.toContain(SECRET);
  });

  it('does not repeat an unknown property name that looks like data', async () => {
    const res = await postJson({ name: 'x', 'alice@example.com': 1 });
    expectProblem(res, 400, 'validation.failed');
    expect(res.body).not.toContain('alice');
  });

  it('never echoes an invalid value', async () => {
    const res = await postJson({ name: `${SECRET}${'z'.repeat(60)}` });
    const body = expectProblem(res, 400, 'validation.failed');
    expect(body.errors).toContainEqual(
      expect.objectContaining({ location: 'body', field: 'name', code: 'maxLength' }),
    );
    expect(res.body).not.toContain(SECRET);
  });

  it('400 for a missing required property', async () => {
    const res = await postJson({});
    const body = expectProblem(res, 400, 'validation.failed');
    expect(body.errors).toContainEqual(
      expect.objectContaining({ location: 'body', field: 'name', code: 'required' }),
    );
  });

  it('does not coerce body types: a number where a string is expected is refused', async () => {
    const res = await postJson({ name: 12345 });
    const body = expectProblem(res, 400, 'validation.failed');
    expect(body.errors).toContainEqual(
      expect.objectContaining({ location: 'body', field: 'name', code: 'type' }),
    );
    const nested = await postJson({ name: 'x', nested: { a: '5' } });
    expectProblem(nested, 400, 'validation.failed');
  });

  it('coerces query string integers and applies defaults', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/_test/query?limit=7' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { limit: 7 } });
    const dflt = await t.app.inject({ method: 'GET', url: '/api/v1/_test/query' });
    expect(dflt.json()).toEqual({ data: { limit: 50 } });
  });

  it('refuses a bad query value with location query', async () => {
    for (const url of [
      '/api/v1/_test/query?limit=abc',
      '/api/v1/_test/query?limit=101',
      '/api/v1/_test/query?sort=x',
    ]) {
      const res = await t.app.inject({ method: 'GET', url });
      const body = expectProblem(res, 400, 'validation.failed');
      expect(body.errors[0].location).toBe('query');
      expect(res.body).not.toContain('abc');
    }
  });
});

describe('X-Request-Id', () => {
  it('is a fresh server UUID on success, 404, 400, 413 and 415, and never the client value', async () => {
    const client = '11111111-2222-4333-8444-555555555555';
    const answers = [
      await t.app.inject({ method: 'GET', url: '/api/v1/_test/ok', headers: { 'x-request-id': client } }),
      await t.app.inject({ method: 'GET', url: '/api/v1/_test/ok', headers: { 'x-request-id': client } }),
      await t.app.inject({ method: 'GET', url: '/api/v2/nope', headers: { 'x-request-id': client } }),
      await postJson('{bad', { 'x-request-id': client }),
      await postJson({ name: 'x', note: 'a'.repeat(20000) }, { 'x-request-id': client }),
      await t.app.inject({
        method: 'POST',
        url: ECHO,
        headers: { 'content-type': 'text/plain', 'x-request-id': client },
        payload: 'x',
      }),
      await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': client } }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 404, 400, 413, 415, 200]);
    const ids = answers.map((r) => r.headers['x-request-id']);
    for (const id of ids) {
      expect(typeof id).toBe('string');
      expect(id).toMatch(UUID_RE);
      expect(id).not.toBe(client);
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of answers) expect(r.body).not.toContain(client);
  });

  it('is set over real HTTP, including on 404', async () => {
    const a = await fetch(`${base}/api/v1/_test/ok`, { headers: { 'x-request-id': 'client-chosen' } });
    const b = await fetch(`${base}/nope`, { headers: { 'x-request-id': 'client-chosen' } });
    expect(a.headers.get('x-request-id')).toMatch(UUID_RE);
    expect(b.headers.get('x-request-id')).toMatch(UUID_RE);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });
});

describe('unexpected failures', () => {
  it('500 internal.unexpected with a safe body; the log keeps the error', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/_test/boom' });
    const body = expectProblem(res, 500, 'internal.unexpected');
    expect(body.retryable).toBe(false);
    expect(res.headers['x-request-id']).toMatch(UUID_RE);
    for (const leak of ['secret internals', 'SELECT', 'FROM x', 'Error', '    at ']) {
      expect(res.body).not.toContain(leak);
    }
    const log = t.logs();
    expect(log).toContain('secret internals SELECT * FROM x');
    // The error's own line names the request, as the access line does.
    const failure = log
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; reqId?: string })
      .filter((l) => l.msg === 'unexpected failure')
      .at(-1);
    expect(failure?.reqId).toBe(res.headers['x-request-id']);
  });

  it('503 service.unavailable with Retry-After for a connection refusal', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/_test/refused' });
    const body = expectProblem(res, 503, 'service.unavailable');
    expect(body.retryable).toBe(true);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.body).not.toContain('10.9.8.7');
    expect(res.body).not.toContain('secret-host');
  });
});
