import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { EventLog } from '../../src/features/events/log.js';
import { WebhookWorker } from '../../src/features/events/webhooks/worker.js';
import { ManualClock } from '../../src/platform/clock.js';
import { Sealer } from '../../src/platform/crypto/seal.js';
import { type Database, openDatabase } from '../../src/platform/db/database.js';
import { silentSignals } from '../../src/platform/metrics/signals.js';
import { ADMIN_KEY, adminEnv } from '../helpers/admin.js';
import { testEnv } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { type Spawned, spawnTs, waitFor } from '../platform/support.js';
import { call, createFreshDatabase } from './support.js';

/**
 * Issue 44: a worker killed mid-send (SIGKILL while the receiver holds its request) leaves its
 * claim behind; once the lease has run out another worker sends the delivery again, with the same
 * webhook-id and the same body, and it is delivered once recorded.
 */
let proc: Spawned | undefined;
let database: Awaited<ReturnType<typeof createFreshDatabase>> | undefined;
let db: Database | undefined;
let receiver: http.Server | undefined;

afterAll(async () => {
  if (proc && proc.child.exitCode === null && proc.child.signalCode === null) {
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
  receiver?.closeAllConnections();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  await db?.close();
  await database?.drop();
});

interface Got {
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('a delivery worker killed mid-send', () => {
  it('leaves the delivery leased; after the lease another worker sends it again with the same webhook-id', async () => {
    database = await createFreshDatabase();
    // The receiver holds the first request unanswered (the worker dies waiting), answers 204 after.
    const got: Got[] = [];
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        if (got.length > 1) res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver?.listen(0, '127.0.0.1', r));
    const sinkUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

    const port = await freePort();
    const adminPort = await freePort();
    const SECRETS_KEY = randomBytes(32).toString('base64');
    proc = spawnTs('src/main.ts', {
      ...adminEnv(),
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      DATABASE_URL: database.url,
      DATA_DIR: mkdtempSync(join(tmpdir(), 'idsvc-webhook-kill-')),
      SECRETS_KEY,
      ARGON2_MEMORY_KIB: '19456',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_PRIVATE_ADDRESSES: 'allow',
    });
    const p = proc;
    await waitFor(
      async () => {
        if (p.child.exitCode !== null) throw new Error(`exited early: ${p.stderr()}`);
        const o = await call(port, '/health/ready');
        return o.kind === 'answer' && o.status === 200 ? true : undefined;
      },
      30_000,
      '/health/ready to answer 200',
      100,
    );
    const created = await call(adminPort, '/admin/v1/webhook-endpoints', {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      body: { url: sinkUrl },
    });
    expect(created.kind === 'answer' && created.status, JSON.stringify(created)).toBe(201);

    // One event, appended as any change appends it; the child's worker picks its delivery up.
    const config = loadConfig(testEnv({ SECRETS_KEY }));
    db = await openDatabase({ url: database.url, dataDir: config.dataDir, poolSize: 2 });
    const clock = new ManualClock(new Date());
    const events = new EventLog(clock);
    const { id: eventId } = await db.db
      .transaction()
      .execute((trx) =>
        events.append(trx, { type: 'organization.updated', actor: null, data: { name: 'kill -9' } }),
      );
    await waitFor(() => (got.length === 1 ? true : undefined), 20_000, 'the first attempt to arrive');
    p.child.kill('SIGKILL');
    expect((await p.exited).signal).toBe('SIGKILL');

    // The claim outlives its worker: leased, its attempt counted, nothing recorded.
    const stranded = await db.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    expect(stranded).toMatchObject({
      event_id: eventId,
      status: 'pending',
      attempts: 1,
      last_attempt_at: null,
    });
    expect(stranded.lease_id).not.toBeNull();

    const w = new WebhookWorker(
      {
        database: db,
        clock,
        sealer: new Sealer(config.keys.sealing),
        log: pino({ enabled: false }),
        config,
        events,
        signals: silentSignals,
      },
      { random: () => 0.5 },
    );
    // Not before the lease (60 s from the claim, on the real clock) has run out.
    clock.set(new Date(new Date(stranded.lease_until as Date).getTime() - 1000));
    expect(await w.runOnce()).toBe(0);
    clock.advance(1);
    expect(await w.runOnce()).toBe(1);
    expect(got).toHaveLength(2);
    expect(got[1].headers['webhook-id']).toBe(eventId);
    expect(got[1].headers['webhook-id']).toBe(got[0].headers['webhook-id']);
    expect(got[1].body).toBe(got[0].body);
    const done = await db.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    expect(done).toMatchObject({ status: 'delivered', attempts: 2, lease_id: null, last_status_code: 204 });
  });
});
