import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { ErasureStep } from './features/admin/service.js';
import { ChallengeFlow } from './features/challenges/service.js';
import { HookService, type Hooks } from './features/events/hooks/service.js';
import { EventLog } from './features/events/log.js';
import { WebhookWorker } from './features/events/webhooks/worker.js';
import { HashProfiles } from './features/identities/hash-profiles.js';
import { AccountLock } from './features/identities/lock.js';
import { OidcService } from './features/oidc/service.js';
import type { SsoDomainSweep } from './features/organizations/sso-requirement/sweep.js';
import { type OutboundFetch, UpstreamProviders } from './features/providers/upstream.js';
import { ProviderVerifier } from './features/providers/verifier.js';
import { forgetScimUsers } from './features/scim/repository.js';
import { SecurityNotices } from './features/security-notices/service.js';
import { SignInNotices } from './features/security-notices/sign-ins.js';
import { AccessTokens } from './features/sessions/access-tokens.js';
import { BrowserSessionCookie } from './features/sessions/browser-session.js';
import { sessionState } from './features/sessions/repository.js';
import { SessionService } from './features/sessions/service.js';
import { ssoDomainSweep } from './features/sessions/sso-required.js';
import { SsoService } from './features/sso/service.js';
import { findElevation } from './features/step-up/repository.js';
import { AuditLog } from './platform/audit/audit.js';
import type { Clock } from './platform/clock.js';
import { type BreachCheck, BreachRange, noBreachRange } from './platform/crypto/breached-passwords.js';
import { checkSecretsKey } from './platform/crypto/key-check.js';
import { createPasswordHasher, type PasswordHasher } from './platform/crypto/passwords.js';
import { Sealer } from './platform/crypto/seal.js';
import { CodeHasher } from './platform/crypto/tokens.js';
import type { Database } from './platform/db/database.js';
import type { AuthDeps } from './platform/http/auth.js';
import { type Signals, silentSignals } from './platform/metrics/signals.js';
import { createNotifier, type Notifier } from './platform/notify/notifier.js';
import { CursorCodec } from './platform/pagination/cursor.js';
import { GuessBudgets, MessageLimits } from './platform/rate-limit/guess-budget.js';

/**
 * What every feature plugin is handed: the collaborators shared by several features, each built
 * once here (app.ts calls createContext before any route registers), in order, each from those
 * before it. This is the wiring level, above features and platform alike: only the route plugins
 * import its type; each service declares the few collaborators it uses (its own `...Deps`
 * interface), which this context satisfies structurally.
 */
export interface AppContext {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  passwords: PasswordHasher;
  /** The imported password-hash profiles present, measured for the refusal floor (docs/import.md). */
  hashProfiles: HashProfiles;
  /** The range API's check of new passwords (BREACHED_PASSWORDS_RANGE_URL), or one that finds none. */
  breaches: BreachCheck;
  audit: AuditLog;
  lock: AccountLock;
  /** Issues and answers every out-of-band and step-up challenge. */
  challenges: ChallengeFlow;
  /** Per-subject guess budgets (RATE_LIMIT_GUESSES). */
  guesses: GuessBudgets;
  /** Messages per identity and per address where the interface counts them (SENDS_A_MESSAGE). */
  messages: MessageLimits;
  notifier: Notifier;
  /** Keyed hashes of out-of-band codes. */
  codes: CodeHasher;
  /** AES-256-GCM for secrets at rest. */
  sealer: Sealer;
  cursors: CursorCodec;
  /** Access-token signer and verifier (loaded before features register). */
  tokens: AccessTokens;
  /** Provider ID-token verification; its remote key sets are caches shared by every route. */
  providers: ProviderVerifier;
  /** Redirect sign-in's upstream providers (openid-client); discovery results are shared caches. */
  upstream: UpstreamProviders;
  /** The session lifecycle: create, renew, end, list (sign-ins open theirs through features/sign-in/). */
  sessions: SessionService;
  /** New-sign-in notices, sent after the answer (SIGN_IN_NOTICES). */
  notices: SignInNotices;
  /** Security notices: a message for every change an attacker would make (docs/security.md). */
  securityNotices: SecurityNotices;
  /** What the session and elevation guards read. */
  auth: AuthDeps;
  /** Events an operator counts (Prometheus when METRICS_PORT is set, silent otherwise). */
  signals: Signals;
  /** The OpenID Provider (docs/oidc.md): keys, clients, grants and their link to sessions. */
  oidc: OidcService;
  /** Events, appended in the transaction of their change (docs/events.md). */
  events: EventLog;
  /** Webhook delivery (WEBHOOK_POLL_MS), started and stopped with the app. */
  webhooks: WebhookWorker;
  /** The deployment's synchronous hooks (docs/events.md, "Synchronous hooks"). */
  hooks: Hooks;
  /**
   * What an erasure also deletes, of features above the operators' acts (admin/service.ts): the
   * SCIM users the identity was provisioned as (docs/scim.md). Run in the erasure's transaction.
   */
  erasing: readonly ErasureStep[];
  /**
   * What a domain's verification also does, of a feature above organizations: while the
   * organization requires SSO, the sessions of the domain's people end (docs/sso.md, "Require SSO").
   */
  ssoDomainSweep: SsoDomainSweep;
}

export async function createContext(
  config: Config,
  database: Database,
  clock: Clock,
  log: FastifyBaseLogger,
  signals: Signals = silentSignals,
  /** Tests send the upstream providers' real hosts to loopback fakes through this. */
  upstreamFetch?: OutboundFetch,
): Promise<AppContext> {
  // First: a SECRETS_KEY the database was not started with stops here, before anything is sealed.
  await checkSecretsKey(database.db, config.keys, clock);
  const sealer = new Sealer(config.keys.sealing);
  // Each purpose has its own key derived from SECRETS_KEY (config.keys), so no key serves two algorithms.
  const audit = new AuditLog(config.keys.auditSeal, clock);
  // Early: the lock and the sessions append their events (identity.locked, session.ended) too.
  const events = new EventLog(clock);
  const lock = new AccountLock(audit, clock, config.lifetimes.lock, signals, events);
  const guesses = new GuessBudgets(
    database.db,
    clock,
    config.keys.guessBudgets,
    config.rateLimits.guesses,
    signals,
  );
  const notifier = observed(
    signals,
    createNotifier({
      production: config.production,
      dataDir: config.dataDir,
      smtpUrl: config.smtpUrl,
      mailFrom: config.mailFrom,
      smsWebhookUrl: config.smsWebhookUrl,
      timeoutMs: config.notifyTimeoutMs,
      log,
    }),
  );
  const codes = new CodeHasher(config.keys.outOfBandCodes);
  const tokens = await AccessTokens.load(database.db, config, clock, sealer);
  const passwords = createPasswordHasher({
    memoryKiB: config.argon2MemoryKiB,
    concurrency: config.argon2Concurrency,
    maxWaitMs: config.argon2MaxWaitMs,
    nice: config.argon2Nice,
    onWait: (ms) => signals.argon2Waited(ms),
    weakHashes: config.weakHashes,
  });
  if (config.weakHashes) {
    log.warn(
      'PASSWORD_WEAK_HASHES=on: imported salted SHA-256/SHA-512 hashes are accepted and verified (one fast digest each); each is replaced by Argon2id at its first successful sign-in',
    );
  }
  const hashProfiles = new HashProfiles(database.db, passwords);
  const breaches = config.breachedPasswords
    ? new BreachRange({
        url: config.breachedPasswords.rangeUrl,
        timeoutMs: config.breachedPasswords.timeoutMs,
        log,
      })
    : noBreachRange;
  const challenges = new ChallengeFlow(
    database.db,
    codes,
    lock,
    clock,
    {
      format: config.verificationCodeFormat,
      length: config.verificationCodeLength,
      lifetime: config.lifetimes.challenge,
      brand: config.brand,
    },
    notifier,
    guesses,
  );
  const messages = new MessageLimits(
    database.db,
    clock,
    config.keys.guessBudgets,
    config.rateLimits.sendsAMessage,
    signals,
  );
  const cursors = new CursorCodec({ id: config.cursorKeyId, secret: config.cursorSigningKey }, clock);
  const auth: AuthDeps = {
    clock,
    verifyAccessToken: (token: string) => tokens.verify(token),
    loadSession: (sessionId: string) => sessionState(database.db, sessionId),
    findElevation: (tokenHash: string) => findElevation(database.db, tokenHash),
  };
  const providers = new ProviderVerifier({ config, clock, log });
  const upstream = new UpstreamProviders({ config, log, ...(upstreamFetch ? { fetch: upstreamFetch } : {}) });
  const sessions = new SessionService({
    config,
    database,
    clock,
    audit,
    guesses,
    cursors,
    tokens,
    signals,
    events,
  });
  // Changes are queued by the audit log's append, in the transaction of the change they record.
  const securityNotices = new SecurityNotices({ config, database, clock, log, notifier, sealer });
  audit.observe(securityNotices.observer());
  const notices = new SignInNotices({ config, database, clock, log, notices: securityNotices });
  const hooks = new HookService({ config, clock, signals, log });
  const oidc = await OidcService.load({
    config,
    database,
    clock,
    sealer,
    guesses,
    audit,
    events,
    log,
    hostedCookie: new BrowserSessionCookie(config.publicOrigin),
    signOut: (sessionId) => sessions.signOut(sessionId),
    liveSessionOf: (refreshToken) => sessions.liveSessionOf(refreshToken),
    customClaims: (request) => hooks.customClaims(request),
    sso: new SsoService({ database, clock, audit, sealer, events, upstream, config, hooks }),
  });
  const webhooks = new WebhookWorker({ config, database, clock, sealer, log, events, signals });
  return {
    config,
    database,
    clock,
    log,
    passwords,
    hashProfiles,
    breaches,
    audit,
    lock,
    challenges,
    guesses,
    messages,
    notifier,
    codes,
    sealer,
    cursors,
    tokens,
    providers,
    upstream,
    sessions,
    notices,
    securityNotices,
    auth,
    signals,
    oidc,
    events,
    webhooks,
    hooks,
    erasing: [forgetScimUsers],
    ssoDomainSweep: ssoDomainSweep(events),
  } satisfies AppContext;
}

/** Every message's outcome is counted by channel. */
function observed(signals: Signals, notifier: Notifier): Notifier {
  return {
    canDeliver: (type) => notifier.canDeliver(type),
    async send(message) {
      const result = await notifier.send(message);
      signals.delivered(message.type, result.status === 'DELIVERED' ? 'delivered' : 'not_delivered');
      return result;
    },
    close: () => notifier.close(),
  };
}
