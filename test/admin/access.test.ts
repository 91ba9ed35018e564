import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ADMIN_KEY, ADMIN_KEY_NAME, adminEntry, adminRequest, OTHER_ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp, testEnv } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { ROOT, spawnTs, within } from '../platform/support.js';

describe('the admin listener', () => {
  let t: TestApp;
  let identityId: string;

  beforeAll(async () => {
    // Only `ops` is configured: the auditor's key stands for one whose entry was removed (revoked).
    t = await createTestApp({ admin: true, env: { ADMIN_API_KEYS: adminEntry(ADMIN_KEY_NAME, ADMIN_KEY) } });
    identityId = (await createPerson(t.ctx)).identityId;
  });
  afterAll(() => t.close());

  const admin = () => {
    if (!t.admin) throw new Error('no admin listener');
    return t.admin;
  };

  it('refuses a missing, other-scheme, empty, wrong or revoked key with the identical 401', async () => {
    const headers: Array<Record<string, string>> = [
      {},
      { authorization: `Basic ${Buffer.from(`ops:${ADMIN_KEY}`).toString('base64')}` },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: `bearer ${ADMIN_KEY}` },
      { authorization: `Bearer ${ADMIN_KEY}x` },
      { authorization: `Bearer ${ADMIN_KEY.slice(0, -1)}` },
      { authorization: `Bearer ${OTHER_ADMIN_KEY}` },
      // The configured hash itself is no key.
      { authorization: `Bearer ${createHash('sha256').update(ADMIN_KEY).digest('hex')}` },
      { authorization: `Bearer ${'a'.repeat(300)}` },
    ];
    const urls: Array<['GET' | 'POST', string]> = [
      ['GET', '/admin/v1/identities'],
      ['GET', `/admin/v1/identities/${identityId}`],
      ['POST', `/admin/v1/identities/${identityId}/disablements`],
      ['POST', `/admin/v1/identities/${identityId}/erasures`],
      ['GET', '/admin/v1/audit-records'],
      ['GET', '/admin/v1/audit-records/stream'],
      ['GET', '/admin/v1/openapi.json'],
      // Authentication comes before validation: a bad id or query tells a stranger nothing.
      ['GET', '/admin/v1/identities/not-a-uuid'],
      ['GET', '/admin/v1/identities?bogus=1'],
    ];
    const bodies = new Set<string>();
    for (const [method, url] of urls) {
      for (const h of headers) {
        const r = await admin().inject({ method, url, headers: h });
        expect(r.statusCode, `${method} ${url} ${JSON.stringify(h)}`).toBe(401);
        expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(r.headers['www-authenticate']).toBe('Bearer');
        bodies.add(r.body);
      }
    }
    expect(bodies.size).toBe(1);
    expect(JSON.parse([...bodies][0])).toEqual({
      type: '/problems/admin.unauthorized',
      title: 'Unauthorized',
      status: 401,
      detail: 'A valid operator key is required.',
      code: 'admin.unauthorized',
      retryable: false,
    });
    // Nothing was written by any of them.
    const records = await adminRequest(admin(), 'GET', '/audit-records');
    expect(records.json().data).toEqual([]);
  });

  it('without a valid key, every path and method answers the one 401: a made-up route looks like a real one', async () => {
    const keys: Array<Record<string, string>> = [
      {},
      { authorization: `Bearer ${ADMIN_KEY}x` },
      // Revoked: its entry is no longer in ADMIN_API_KEYS.
      { authorization: `Bearer ${OTHER_ADMIN_KEY}` },
    ];
    const requests: Array<[string, string]> = [
      // Real routes.
      ['GET', '/admin/v1/identities'],
      ['GET', `/admin/v1/identities/${identityId}`],
      ['POST', `/admin/v1/identities/${identityId}/lock-clearances`],
      ['GET', '/admin/v1/audit-records/stream'],
      ['GET', '/admin/v1/openapi.json'],
      // Real paths, methods they do not have.
      ['POST', '/admin/v1/identities'],
      ['DELETE', `/admin/v1/identities/${identityId}`],
      ['PUT', '/admin/v1/audit-records'],
      ['PATCH', '/admin/v1/openapi.json'],
      ['OPTIONS', '/admin/v1/identities'],
      // Made up, under the prefix and outside it.
      ['GET', '/admin/v1/users'],
      ['GET', `/admin/v1/identities/${identityId}/devices`],
      ['POST', `/admin/v1/identities/${identityId}/exports`],
      ['GET', '/admin/v1/'],
      ['GET', '/admin/v2/identities'],
      ['GET', '/admin'],
      ['GET', '/'],
      ['GET', '/openapi.json'],
      ['GET', '/health/live'],
      ['POST', '/api/v1/sign-ins'],
      ['DELETE', '/anything/at/all?x=1'],
    ];
    // Everything but the per-request id and instant.
    const shape = (r: { statusCode: number; headers: Record<string, unknown>; body: string }) => {
      const { 'x-request-id': _id, date: _date, ...headers } = r.headers;
      return JSON.stringify({ status: r.statusCode, headers, body: r.body });
    };
    const answers = new Map<string, string[]>();
    for (const [method, url] of requests) {
      for (const h of keys) {
        const r = await admin().inject({ method: method as 'GET', url, headers: h });
        const seen = answers.get(shape(r)) ?? [];
        seen.push(`${method} ${url} ${JSON.stringify(h)}`);
        answers.set(shape(r), seen);
      }
    }
    const groups = [...answers].map(([a, reqs]) => `${JSON.parse(a).status} ×${reqs.length}: ${reqs[0]}`);
    expect(groups).toEqual([expect.stringMatching(`^401 ×${requests.length * keys.length}: `)]);
    const [only] = [...answers.keys()];
    expect(JSON.parse(only)).toMatchObject({
      status: 401,
      headers: { 'www-authenticate': 'Bearer', 'cache-control': 'no-store' },
    });
    expect(JSON.parse(JSON.parse(only).body).code).toBe('admin.unauthorized');
    // HEAD carries no body; its answer is the same 401 for a real and a made-up path.
    const heads = new Set<string>();
    for (const url of ['/admin/v1/identities', '/admin/v1/users', '/nope']) {
      heads.add(shape(await admin().inject({ method: 'HEAD', url })));
    }
    expect(heads.size).toBe(1);
    expect(JSON.parse([...heads][0]).status).toBe(401);
  });

  // The router refuses an over-long path parameter and a malformed percent-encoding before any
  // hook runs; createServer's frameworkErrors asks the admin guard first, so those get the 401 too.
  it('without a valid key, a path the router itself refuses answers the one 401 too', async () => {
    const long = 'a'.repeat(101);
    const answers = new Set<string>();
    for (const url of [
      `/admin/v1/identities/${long}`,
      `/admin/v1/identities/${long}/erasures`,
      `/admin/v1/users/${long}`,
      '/admin/v1/identities/%zz',
      '/admin/v1/users',
    ]) {
      const r = await admin().inject({ method: 'GET', url });
      answers.add(`${r.statusCode} ${r.body}`);
    }
    expect([...answers]).toEqual([expect.stringMatching(/^401 .*admin\.unauthorized/)]);
  });

  it('with a valid key, a made-up path or a method a path lacks answers 404 route.not_found', async () => {
    for (const [method, url] of [
      ['GET', '/admin/v1/users'],
      ['GET', `/admin/v1/identities/${identityId}/devices`],
      ['DELETE', `/admin/v1/identities/${identityId}`],
      ['POST', '/admin/v1/identities'],
      ['GET', '/'],
    ] as const) {
      const r = await admin().inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      expect(r.statusCode, `${method} ${url}`).toBe(404);
      expect(r.json().code).toBe('route.not_found');
      expect(r.headers['cache-control']).toBe('no-store');
    }
  });

  it('accepts the configured key', async () => {
    const r = await adminRequest(admin(), 'GET', `/identities/${identityId}`);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('the public port answers 404 route.not_found for /admin/v1/...', async () => {
    for (const [method, url] of [
      ['GET', '/admin/v1/identities'],
      ['GET', `/admin/v1/identities/${identityId}`],
      ['POST', `/admin/v1/identities/${identityId}/erasures`],
      ['GET', '/admin/v1/audit-records'],
      ['GET', '/admin/v1/openapi.json'],
    ] as const) {
      const r = await t.app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      expect(r.statusCode, url).toBe(404);
      expect(r.json().code).toBe('route.not_found');
    }
  });

  it('the admin listener serves nothing but /admin/v1', async () => {
    for (const url of ['/api/v1/session/context', '/openapi.json', '/health/live']) {
      const r = await admin().inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${ADMIN_KEY}` },
      });
      expect(r.statusCode, url).toBe(404);
      expect(r.json().code).toBe('route.not_found');
    }
  });

  it('each listener documents only its own routes', async () => {
    const pub = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const paths = Object.keys(pub.paths);
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((p) => p.startsWith('/admin'))).toEqual([]);
    expect(JSON.stringify(pub)).not.toContain('adminKey');

    const doc = (await adminRequest(admin(), 'GET', '/openapi.json')).json();
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/admin/v1/audit-records',
      '/admin/v1/audit-records/stream',
      '/admin/v1/connection-tests/{id}',
      '/admin/v1/events',
      '/admin/v1/events/stream',
      '/admin/v1/events/{id}',
      '/admin/v1/exports/identities',
      '/admin/v1/health',
      '/admin/v1/identities',
      '/admin/v1/identities/{id}',
      '/admin/v1/identities/{id}/connected-apps',
      '/admin/v1/identities/{id}/disablements',
      '/admin/v1/identities/{id}/enablements',
      '/admin/v1/identities/{id}/erasures',
      '/admin/v1/identities/{id}/lock-clearances',
      '/admin/v1/identities/{id}/organizations',
      '/admin/v1/identities/{id}/session-revocations',
      '/admin/v1/identities/{id}/sessions',
      '/admin/v1/imports',
      '/admin/v1/imports/schema',
      '/admin/v1/oidc-clients',
      '/admin/v1/oidc-clients/{clientId}',
      '/admin/v1/oidc-clients/{clientId}/secret-rotations',
      '/admin/v1/operators',
      '/admin/v1/operators/{identityId}',
      '/admin/v1/organizations',
      '/admin/v1/organizations/{id}',
      '/admin/v1/organizations/{id}/connections',
      '/admin/v1/organizations/{id}/connections/{connectionId}',
      '/admin/v1/organizations/{id}/connections/{connectionId}/tests',
      '/admin/v1/organizations/{id}/disablements',
      '/admin/v1/organizations/{id}/domains',
      '/admin/v1/organizations/{id}/domains/{domainId}/verifications',
      '/admin/v1/organizations/{id}/invitations',
      '/admin/v1/organizations/{id}/invitations/{invitationId}',
      '/admin/v1/organizations/{id}/members',
      '/admin/v1/organizations/{id}/members/{identityId}',
      '/admin/v1/organizations/{id}/scim-tokens',
      '/admin/v1/organizations/{id}/scim-tokens/{tokenId}',
      '/admin/v1/organizations/{id}/sso-requirement',
      '/admin/v1/webhook-endpoints',
      '/admin/v1/webhook-endpoints/{id}',
      '/admin/v1/webhook-endpoints/{id}/deliveries',
      '/admin/v1/webhook-endpoints/{id}/deliveries/{deliveryId}/resends',
      '/admin/v1/webhook-endpoints/{id}/disablements',
      '/admin/v1/webhook-endpoints/{id}/recoveries',
      '/admin/v1/webhook-endpoints/{id}/secret-rotations',
    ]);
    expect(doc.components.securitySchemes.adminKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const op of Object.values(item) as Array<{
        security: unknown;
        responses: Record<string, unknown>;
      }>) {
        expect(op.security, path).toEqual([{ adminKey: [] }]);
        expect(Object.keys(op.responses), path).toContain('401');
        // An operator signed in with a role that does not allow the route is refused.
        expect(Object.keys(op.responses), path).toContain('403');
      }
    }
    for (const stream of ['/admin/v1/audit-records/stream', '/admin/v1/events/stream']) {
      expect(doc.paths[stream].get.responses['200'].content, stream).toHaveProperty('application/x-ndjson');
    }
  });
});

it('the admin listener is off by default', async () => {
  const t = await createTestApp();
  try {
    expect(t.admin).toBeUndefined();
    expect(t.config.admin.port).toBe(0);
  } finally {
    await t.close();
  }
});

describe('configuration', () => {
  const entry = adminEntry('ops', ADMIN_KEY);
  const refusals: Array<[string, Record<string, string>, string]> = [
    ['ADMIN_PORT without keys', { ADMIN_PORT: '3999' }, 'ADMIN_API_KEYS'],
    ['ADMIN_PORT equal to PORT', { ADMIN_PORT: '3000', ADMIN_API_KEYS: entry }, 'ADMIN_PORT'],
    [
      'ADMIN_PORT equal to METRICS_PORT',
      { ADMIN_PORT: '9464', METRICS_PORT: '9464', ADMIN_API_KEYS: entry },
      'ADMIN_PORT',
    ],
    ['ADMIN_PORT out of range', { ADMIN_PORT: '70000', ADMIN_API_KEYS: entry }, 'ADMIN_PORT'],
    ['a key entry without a name', { ADMIN_API_KEYS: `:${'a'.repeat(64)}` }, 'ADMIN_API_KEYS'],
    ['a key entry with a short hash', { ADMIN_API_KEYS: `ops:${'a'.repeat(63)}` }, 'ADMIN_API_KEYS'],
    ['a key entry with a raw key', { ADMIN_API_KEYS: `ops:${ADMIN_KEY}` }, 'ADMIN_API_KEYS'],
    ['a name in capitals', { ADMIN_API_KEYS: `Ops:${'a'.repeat(64)}` }, 'ADMIN_API_KEYS'],
    [
      'a repeated name',
      { ADMIN_API_KEYS: `${entry},${adminEntry('ops', OTHER_ADMIN_KEY)}` },
      'ADMIN_API_KEYS',
    ],
  ];
  it.each(refusals)('refuses %s with one line naming the variable', (_name, env, variable) => {
    let error: unknown;
    try {
      loadConfig(testEnv(env));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect((error as ConfigError).variable).toBe(variable);
    expect(message).toMatch(new RegExp(`^invalid configuration: ${variable} `));
    expect(message).not.toContain('\n');
    expect(message).not.toContain(ADMIN_KEY);
  });

  it('reads the listener and its keys', () => {
    const c = loadConfig(
      testEnv({
        ADMIN_PORT: '3999',
        ADMIN_HOST: '10.0.0.5',
        ADMIN_API_KEYS: ` ${entry} , ${adminEntry('night.shift-2', OTHER_ADMIN_KEY)}`,
      }),
    );
    expect(c.admin.host).toBe('10.0.0.5');
    expect(c.admin.port).toBe(3999);
    expect(c.admin.keys.map((k) => k.name)).toEqual(['ops', 'night.shift-2']);
    expect(c.admin.keys[0].hash.equals(createHash('sha256').update(ADMIN_KEY).digest())).toBe(true);
  });

  it('start-up stops with one line naming ADMIN_API_KEYS', async () => {
    const run = spawnTs('src/main.ts', { ...testEnv({ ADMIN_PORT: '3999' }), DATABASE_URL: 'memory://' });
    const { code } = await within(run.exited, 30000, 'the service to refuse its configuration');
    expect(code).toBe(1);
    const lines = run.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe('invalid configuration: ADMIN_API_KEYS is required when ADMIN_PORT is set');
  });
});

describe('npm run admin:key', () => {
  it('its output configures a key the listener accepts, and each run makes a different key', async () => {
    const outputs = await Promise.all([adminKey('night-ops'), adminKey('day-ops')]);
    const [a, b] = outputs.map((out) => ({
      key: /^key: +(\S+)$/m.exec(out)?.[1] ?? '',
      entry: /^entry: +(\S+)$/m.exec(out)?.[1] ?? '',
    }));
    expect(a.key).toMatch(/^adm_[A-Za-z0-9_-]{43}$/);
    expect(a.entry).toMatch(/^night-ops:[0-9a-f]{64}$/);
    expect(b.entry).toMatch(/^day-ops:[0-9a-f]{64}$/);
    expect(a.key).not.toBe(b.key);
    const t = await createTestApp({ admin: true, env: { ADMIN_API_KEYS: `${a.entry},${b.entry}` } });
    try {
      const admin = t.admin!;
      expect((await adminRequest(admin, 'GET', '/identities', a.key)).statusCode).toBe(200);
      expect((await adminRequest(admin, 'GET', '/identities', b.key)).statusCode).toBe(200);
      expect((await adminRequest(admin, 'GET', '/identities', ADMIN_KEY)).statusCode).toBe(401);
      const person = await createPerson(t.ctx);
      expect(
        (await adminRequest(admin, 'POST', `/identities/${person.identityId}/lock-clearances`, b.key))
          .statusCode,
      ).toBe(204);
      const records = (await adminRequest(admin, 'GET', '/audit-records', a.key)).json().data;
      expect(records[0].actor).toBe('admin:day-ops');
    } finally {
      await t.close();
    }
  });

  it('refuses a name config would refuse', async () => {
    for (const args of [[], ['Ops'], ['-ops'], ['ops:x'], ['a'.repeat(64)], ['ops', 'extra']]) {
      const out = await adminKey(...args).catch((err: Error) => err.message);
      expect(out, JSON.stringify(args)).toMatch(/^usage: npm run admin:key -- NAME/);
    }
  });
});

/** Runs src/admin-key.ts with tsx (as npm run admin:key -- ARGS does); rejects with stderr on a non-zero exit. */
function adminKey(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin-key.ts', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(err))));
  });
}
