import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

const ALLOWED = 'https://app.example';

describe('CORS with CORS_ORIGINS set', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      env: { CORS_ORIGINS: `${ALLOWED},http://localhost:5173` },
      extend(app) {
        app.get('/api/v1/_test/ok', async (_req, reply) => {
          reply.header('etag', '"v1"');
          return { data: { ok: true } };
        });
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers an allowed origin with allow-origin and the exposed headers, without credentials', async () => {
    for (const url of ['/api/v1/_test/ok', '/health/live', '/api/v1/nope']) {
      const res = await t.app.inject({ method: 'GET', url, headers: { origin: ALLOWED } });
      expect(res.headers['access-control-allow-origin'], url).toBe(ALLOWED);
      const exposed = String(res.headers['access-control-expose-headers'])
        .split(',')
        .map((h) => h.trim().toLowerCase());
      expect(exposed).toContain('etag');
      expect(exposed).toContain('x-request-id');
      expect(res.headers['access-control-allow-credentials']).not.toBe('true');
    }
    const second = await t.app.inject({
      method: 'GET',
      url: '/api/v1/_test/ok',
      headers: { origin: 'http://localhost:5173' },
    });
    expect(second.headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });

  it('gives a refused origin no allow-origin header', async () => {
    for (const origin of [
      'https://evil.example',
      'https://app.example.evil.example',
      'http://app.example',
      'null',
    ]) {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/_test/ok', headers: { origin } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin'], origin).toBeUndefined();
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    }
  });

  it('answers a preflight for an allowed origin', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/_test/ok',
      headers: {
        origin: ALLOWED,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,authorization',
      },
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(200);
    expect(res.statusCode).toBeLessThan(300);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
    const allowed = String(res.headers['access-control-allow-headers']).toLowerCase();
    expect(allowed).toContain('content-type');
    expect(allowed).toContain('authorization');
    expect(res.headers['access-control-allow-credentials']).not.toBe('true');
  });

  it('gives a preflight from a refused origin no allow-origin header', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/_test/ok',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('with the default configuration', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('CORS allows no origin', async () => {
    expect(t.config.corsOrigins).toEqual([]);
    for (const origin of [ALLOWED, 'http://localhost:3000', 'http://127.0.0.1:3000']) {
      const res = await t.app.inject({ method: 'GET', url: '/health/live', headers: { origin } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const pre = await t.app.inject({
        method: 'OPTIONS',
        url: '/health/live',
        headers: { origin, 'access-control-request-method': 'GET' },
      });
      expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('the OpenAPI document is OpenAPI 3.0.3, version 2.0.0, served at /openapi.json', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = res.json();
    expect(doc.openapi).toBe('3.0.3');
    expect(doc.info.version).toBe('2.0.0');
    expect(typeof doc.info.title).toBe('string');
    expect(doc).not.toHaveProperty('data');
  });

  it('the OpenAPI document lists the health probes and not itself', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const paths = Object.keys(doc.paths);
    expect(paths).toContain('/health/live');
    expect(paths).toContain('/health/ready');
    expect(doc.paths['/health/live']).toHaveProperty('get');
    expect(doc.paths['/health/ready']).toHaveProperty('get');
    expect(paths).not.toContain('/openapi.json');
    // Business routes are versioned; nothing is listed under an undeclared prefix.
    for (const p of paths) {
      expect(p.startsWith('/api/') ? /^\/api\/v1\//.test(p) : true, p).toBe(true);
      expect(p).not.toContain('_test');
    }
  });

  it('the OpenAPI document is not served under a prefix', async () => {
    for (const url of ['/api/v1/openapi.json', '/openapi', '/api/openapi.json']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
    }
  });
});
