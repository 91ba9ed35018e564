import type { FastifyBaseLogger } from 'fastify';
import { type Config, deriveKey } from '../config.js';
import { ChallengeFlow } from '../features/challenges/service.js';
import { AccountLock } from '../features/identities/lock.js';
import { AccessTokens } from '../features/sessions/access-tokens.js';
import { AuditLog } from './audit/audit.js';
import type { Clock } from './clock.js';
import { createPasswordHasher, type PasswordHasher } from './crypto/passwords.js';
import { Sealer } from './crypto/seal.js';
import { CodeHasher } from './crypto/tokens.js';
import type { Database } from './db/database.js';
import { createNotifier, type Notifier } from './notify/notifier.js';
import { CursorCodec } from './pagination/cursor.js';

/** What every feature plugin is handed: built once in app.ts, shared by all routes. */
export interface AppContext {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  passwords: PasswordHasher;
  audit: AuditLog;
  lock: AccountLock;
  /** Issues and answers every out-of-band and step-up challenge. */
  challenges: ChallengeFlow;
  notifier: Notifier;
  /** Keyed hashes of out-of-band codes. */
  codes: CodeHasher;
  /** AES-256-GCM for secrets at rest. */
  sealer: Sealer;
  cursors: CursorCodec;
  /** Access-token signer and verifier (loaded before features register). */
  tokens: AccessTokens;
}

export async function createContext(
  config: Config,
  database: Database,
  clock: Clock,
  log: FastifyBaseLogger,
): Promise<AppContext> {
  const sealer = new Sealer(deriveKey(config.secretsKey, 'sealing'));
  // Each purpose gets its own key derived from SECRETS_KEY, so no key serves two algorithms.
  const audit = new AuditLog(deriveKey(config.secretsKey, 'audit-seal'), clock);
  const lock = new AccountLock(audit, clock, config.lifetimes.lock);
  const codes = new CodeHasher(deriveKey(config.secretsKey, 'out-of-band-codes'));
  return {
    config,
    database,
    clock,
    log,
    passwords: createPasswordHasher({
      memoryKiB: config.argon2MemoryKiB,
      concurrency: config.argon2Concurrency,
    }),
    audit,
    lock,
    challenges: new ChallengeFlow(database.db, codes, lock, clock, {
      format: config.verificationCodeFormat,
      length: config.verificationCodeLength,
      lifetime: config.lifetimes.challenge,
    }),
    notifier: createNotifier({
      production: config.production,
      dataDir: config.dataDir,
      smtpUrl: config.smtpUrl,
      mailFrom: config.mailFrom,
      smsWebhookUrl: config.smsWebhookUrl,
      timeoutMs: config.notifyTimeoutMs,
      log,
    }),
    codes,
    sealer,
    cursors: new CursorCodec({ id: config.cursorKeyId, secret: config.cursorSigningKey }, clock),
    tokens: await AccessTokens.load(database.db, config, clock, sealer),
  };
}
