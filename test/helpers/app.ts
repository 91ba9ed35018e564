import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import type { OutboundFetch } from '../../src/features/providers/upstream.js';
import { ManualClock } from '../../src/platform/clock.js';
import { adminEnv } from './admin.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface TestApp {
  app: FastifyInstance;
  /** The operators' listener, with `admin: true` (inject into it; it never listens in tests). */
  admin?: FastifyInstance;
  ctx: AppContext;
  config: Config;
  clock: ManualClock;
  db: TestDatabase;
  /** Every log line the app wrote, as text. */
  logs(): string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  server?: boolean;
  clock?: ManualClock;
  /** Reuse a database (two app instances on one database). */
  db?: TestDatabase;
  /** Builds the operators' listener too, with the keys of test/helpers/admin.ts. */
  admin?: boolean;
  /** The upstream providers' HTTP requests, sent to loopback fakes (test/helpers/upstream.ts). */
  upstreamFetch?: OutboundFetch;
  /** Adds test-only routes before the app is ready (platform tests). */
  extend?: (app: FastifyInstance) => void | Promise<void>;
}

export function testEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'idsvc-')),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'info',
    // Small Argon2 memory keeps the suite fast; production refuses anything under 19 MiB.
    ARGON2_MEMORY_KIB: '1024',
    // The suites run many processes at once on two cores: a hashing thread at nice 19 (the
    // production default) would wait for every other test file and stretch sign-ins past their
    // timeouts. Its priority is tested on its own (src/platform/crypto/passwords.test.ts).
    ARGON2_NICE: '0',
    // Generous limits so functional tests do not trip them; rate-limit tests set their own.
    RATE_LIMIT_SENDS_A_MESSAGE: '1000/60',
    RATE_LIMIT_ANSWERS_A_CHALLENGE: '1000/60',
    RATE_LIMIT_PROVES_A_PASSWORD: '1000/60',
    RATE_LIMIT_ACCOUNT_EXPORTS: '1000/60',
    RATE_LIMIT_PICTURE_UPLOADS: '1000/60',
    RATE_LIMIT_OIDC_AUTHORIZATIONS: '1000/60',
    // Tests sign in from many addresses; notices (on by default) are tested on their own.
    SIGN_IN_NOTICES: 'off',
    SECURITY_NOTICES: 'off',
    // Bundling the hosted UI costs every test app a build; the UI's own suites turn it on.
    ACCOUNT_UI: 'off',
    RATE_LIMIT_GUESSES: '1000/1',
    // The audit head's log line would land in every test's log; the anchor has its own test.
    AUDIT_HEAD_LOG_SECONDS: '0',
    // Webhook tests drive their own worker round by round (test/events).
    WEBHOOK_POLL_MS: '0',
    ...extra,
  };
}

export async function createTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const config = loadConfig(testEnv({ ...(opts.admin ? adminEnv() : {}), ...opts.env }));
  const db = opts.db ?? (await createTestDatabase({ server: opts.server }));
  const clock = opts.clock ?? new ManualClock('2026-03-01T12:00:00.000Z');
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  const { app, ctx, admin } = await buildApp({
    config,
    database: db.database,
    clock,
    logStream: stream,
    rateLimitNamespace: `rl-${randomBytes(4).toString('hex')}:`,
    ...(opts.upstreamFetch ? { upstreamFetch: opts.upstreamFetch } : {}),
  });
  if (opts.extend) await opts.extend(app);
  await app.ready();
  await admin?.ready();
  return {
    app,
    admin,
    ctx,
    config,
    clock,
    db,
    logs: () => text,
    async close() {
      // The tests are over: no socket is left to drain. Without this a browser suite's teardown
      // sometimes waited about 60 s (Node's headersTimeout) for a connection Chromium had opened
      // and never used before it was closed.
      app.server.closeAllConnections();
      await app.close();
      if (!opts.db) await db.drop();
    },
  };
}
