import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answered, call, createFreshDatabase, randomLoopback } from '../faults/support.js';
import { freePort } from '../helpers/net.js';
import { lastCode } from '../helpers/outbox.js';
import { type Spawned, spawnTs, waitFor, within } from '../platform/support.js';

/**
 * Issue 7 item 6 (contract 10): two service processes on one PostgreSQL database and one Redis.
 * Whatever one instance does (a confirmation, a sign-out, a spent refresh token or code, a rate-limit
 * count) holds on the other at the very next request.
 *
 * Rate-limit keys are `identity-rl:<route>-<route name>|<client address>` on the shared Redis. Each
 * test sends from its own random loopback address (127.x.y.z), so its counters are its own; only the
 * keys of those addresses are deleted, before and after. Deleting every `identity-rl:*` key would
 * also reset the counters of any other run using the same Redis at the same moment.
 */
const REDIS_URL = 'redis://127.0.0.1:6379';
const NAMESPACE = 'identity-rl:';
const PASSWORD = `two-${randomBytes(8).toString('hex')}-pw`;

interface Instance {
  name: 'A' | 'B';
  port: number;
  proc: Spawned;
}

let database: Awaited<ReturnType<typeof createFreshDatabase>> | undefined;
let redis: Redis;
const instances: Instance[] = [];
const clients: string[] = [];
let dataDir: string;

/** A fresh client address for this test, registered for the Redis clean-up. */
function client(): string {
  const address = randomLoopback();
  clients.push(address);
  return address;
}

async function deleteKeysOf(addresses: string[]): Promise<void> {
  for (const a of addresses) {
    const keys = await redis.keys(`${NAMESPACE}*|${a}`);
    if (keys.length > 0) await redis.del(...keys);
  }
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  database = await createFreshDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'idsvc-two-'));
  const SECRETS_KEY = randomBytes(32).toString('base64');
  const [portA, portB] = [await freePort(), await freePort()];
  // Both start at once: migrations and the first signing key are made under advisory locks.
  for (const [name, port] of [
    ['A', portA],
    ['B', portB],
  ] as const) {
    const proc = spawnTs('src/main.ts', {
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      // One public origin for the deployment: tokens name it as issuer and audience.
      PUBLIC_ORIGIN: 'http://identity.test',
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      SECRETS_KEY,
      REDIS_URL,
      LOG_LEVEL: 'warn',
      ARGON2_MEMORY_KIB: '19456',
      RATE_LIMIT_SENDS_A_MESSAGE: '100000/60',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000/60',
      RATE_LIMIT_PROVES_A_PASSWORD: '4/60',
    });
    instances.push({ name, port, proc });
  }
  await Promise.all(
    instances.map((i) =>
      waitFor(
        async () => {
          if (i.proc.child.exitCode !== null) throw new Error(`${i.name} exited: ${i.proc.stderr()}`);
          const o = await call(i.port, '/health/ready');
          return o.kind === 'answer' && o.status === 200 ? true : undefined;
        },
        40_000,
        `instance ${i.name} to be ready`,
        100,
      ),
    ),
  );
});

afterAll(async () => {
  // Only our own children, by their handles: SIGTERM, then SIGKILL if they linger.
  for (const i of instances) {
    if (i.proc.child.exitCode === null && i.proc.child.signalCode === null) i.proc.child.kill('SIGTERM');
  }
  for (const i of instances) {
    await within(i.proc.exited, 12_000, `${i.name} to exit`).catch(async () => {
      i.proc.child.kill('SIGKILL');
      await i.proc.exited;
    });
  }
  if (redis) {
    await deleteKeysOf(clients).catch(() => {});
    redis.disconnect();
  }
  await database?.drop();
});

const A = () => instances[0];
const B = () => instances[1];

async function post(i: Instance, path: string, from: string, body?: unknown, token?: string) {
  return answered(
    await call(i.port, `/api/v1${path}`, {
      method: 'POST',
      body,
      localAddress: from,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }),
  );
}

async function get(i: Instance, path: string, from: string, token?: string) {
  return answered(
    await call(i.port, `/api/v1${path}`, {
      localAddress: from,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }),
  );
}

const email = (label: string) => `two-${label}-${randomBytes(4).toString('hex')}@example.com`;
const form = (identifier: string) => ({ identifierType: 'email', identifier });

/** The code of the newest message to `to` in the outbox both instances append to. */
const codeFor = (to: string): string => lastCode(dataDir, to, 6);

async function register(on: Instance, from: string, address: string): Promise<string> {
  const res = await post(on, '/sign-ups', from, { ...form(address), password: PASSWORD });
  expect(res.status, res.body).toBe(201);
  expect(JSON.parse(res.body).data.challengeDelivery.status).toBe('DELIVERED');
  return codeFor(address);
}

async function signIn(on: Instance, from: string, address: string) {
  const res = await post(on, '/sign-ins', from, { ...form(address), password: PASSWORD });
  expect(res.status, res.body).toBe(201);
  return JSON.parse(res.body).data as { accessToken: string; refreshToken: string };
}

/** A verified account, registered and confirmed on `on`. */
async function account(on: Instance, from: string): Promise<string> {
  const address = email('acct');
  const code = await register(on, from, address);
  const ok = await post(on, '/sign-ups/confirmations', from, { ...form(address), password: PASSWORD, code });
  expect(ok.status, ok.body).toBe(204);
  return address;
}

describe('two instances on one database and one Redis', () => {
  it('registration on A is confirmed on B, and the account signs in on both', async () => {
    const from = client();
    const address = email('reg');
    const code = await register(A(), from, address);
    const confirmed = await post(B(), '/sign-ups/confirmations', from, {
      ...form(address),
      password: PASSWORD,
      code,
    });
    expect(confirmed.status, confirmed.body).toBe(204);
    await signIn(A(), from, address);
    await signIn(B(), from, address);
  });

  it('a sign-up code spent on A cannot be spent on B', async () => {
    const from = client();
    const address = email('spent');
    const code = await register(A(), from, address);
    const body = { ...form(address), password: PASSWORD, code };
    expect((await post(A(), '/sign-ups/confirmations', from, body)).status).toBe(204);
    const again = await post(B(), '/sign-ups/confirmations', from, body);
    expect(again.status).toBe(422);
    expect(JSON.parse(again.body).code).toBe('identity.verification_refused');
  });

  it("A's access token works on B; a sign-out on B is refused on A at the very next request", async () => {
    const from = client();
    const address = await account(A(), from);
    const grant = await signIn(A(), from, address);
    const onB = await get(B(), '/session/context', from, grant.accessToken);
    expect(onB.status, onB.body).toBe(200);
    const onA = await get(A(), '/session/context', from, grant.accessToken);
    expect(JSON.parse(onA.body).data.sessionId).toBe(JSON.parse(onB.body).data.sessionId);

    expect((await post(B(), '/sign-outs', from, undefined, grant.accessToken)).status).toBe(204);
    for (const i of [A(), B()]) {
      const refused = await get(i, '/session/context', from, grant.accessToken);
      expect(refused.status, `${i.name} ${refused.body}`).toBe(401);
      expect(JSON.parse(refused.body).code).toBe('identity.session_required');
    }
    // Its refresh token is dead on the other instance too.
    const renewal = await post(A(), '/sign-ins/renewals', from, { refreshToken: grant.refreshToken });
    expect(renewal.status).toBe(401);
  });

  it('a refresh token renewed on A and replayed on B ends the session on both', async () => {
    const from = client();
    const address = await account(B(), from);
    const first = await signIn(A(), from, address);
    const renewed = await post(A(), '/sign-ins/renewals', from, { refreshToken: first.refreshToken });
    expect(renewed.status, renewed.body).toBe(201);
    const second = JSON.parse(renewed.body).data as { accessToken: string; refreshToken: string };
    expect((await get(B(), '/session/context', from, second.accessToken)).status).toBe(200);

    const replay = await post(B(), '/sign-ins/renewals', from, { refreshToken: first.refreshToken });
    expect(replay.status).toBe(401);
    expect(JSON.parse(replay.body).code).toBe('identity.renewal_refused');

    // The replay revoked the session: the current refresh token and the access token are dead everywhere.
    const current = await post(A(), '/sign-ins/renewals', from, { refreshToken: second.refreshToken });
    expect(current.status).toBe(401);
    expect(JSON.parse(current.body).code).toBe('identity.renewal_refused');
    for (const i of [A(), B()]) {
      const refused = await get(i, '/session/context', from, second.accessToken);
      expect(refused.status, i.name).toBe(401);
    }
  });

  it('the sign-in rate limit (4/60) is counted across both instances', async () => {
    const setup = client();
    const address = await account(A(), setup);
    const wrong = { ...form(address), password: `${PASSWORD}-wrong` };

    // The limiter fails open while an instance's Redis connection is not up yet: before counting,
    // each instance must have written a counter of its own (from a probe address) to Redis.
    for (const i of [A(), B()]) {
      const probe = client();
      await waitFor(
        async () => {
          const res = await post(i, '/sign-ins', probe, wrong);
          expect(res.status).not.toBe(500);
          const keys = await redis.keys(`${NAMESPACE}*sign-ins|${probe}`);
          return keys.length > 0 ? true : undefined;
        },
        5_000,
        `instance ${i.name} to count in Redis`,
        100,
      );
    }

    const from = client();
    await deleteKeysOf([from]);
    const attempts: Array<[Instance, number]> = [];
    for (const i of [A(), A(), B(), B()]) {
      const res = await post(i, '/sign-ins', from, wrong);
      attempts.push([i, res.status]);
    }
    // Four attempts, two per instance, all pass the limiter (and are refused for the wrong password).
    expect(attempts.map(([i, s]) => `${i.name}:${s}`)).toEqual(['A:401', 'A:401', 'B:401', 'B:401']);

    for (const i of [A(), B()]) {
      // The fifth (and any later) attempt on either instance is limited, even with the right password.
      const limited = await post(i, '/sign-ins', from, { ...form(address), password: PASSWORD });
      expect(limited.status, `${i.name} ${limited.body}`).toBe(429);
      expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(limited.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.parse(limited.body)).toMatchObject({ code: 'rate_limit.exceeded', retryable: true });
    }
    const keys = await redis.keys(`${NAMESPACE}*sign-ins|${from}`);
    expect(keys).toHaveLength(1);
    expect(Number(await redis.get(keys[0]))).toBe(6);

    // Another client address is not affected.
    await signIn(B(), client(), address);
  });
});
