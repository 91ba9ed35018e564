import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, onResponseHookHandler } from 'fastify';
import type { Config } from '../../config.js';
import type { AuditEvent, AuditObserver } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { requestMeta } from '../../platform/http/auth.js';
import { onlySafeMethods } from '../../platform/http/safe-methods.js';
import type { ChannelType, Notifier } from '../../platform/notify/notifier.js';
import {
  changesEmail,
  changesSms,
  deletionEmail,
  deletionSms,
  type Message,
  signInEmail,
} from '../../platform/notify/templates.js';
import type { Locale } from '../../shared/locales.js';
import { identityLocale, verifiedIdentifiers } from '../identities/repository.js';
import { describeDevice } from '../sessions/devices.js';
import { markNoticeSent } from '../sessions/repository.js';
import { noticeFor } from './kinds.js';
import {
  claimWindow,
  dueStreams,
  forgetIdentity,
  identifierById,
  insertNotice,
  type NoticeStream,
  type QueuedNotice,
  sweepWindows,
  takeQueued,
} from './repository.js';

/**
 * At most one message per identity and stream (changes, new sign-ins) per window (docs/security.md,
 * "Notices").
 */
export const NOTICE_WINDOW_SECONDS = 15 * 60;
/** How often each instance looks for windows that have ended with notices held behind them. */
export const DISPATCH_SECONDS = 60;
/** Identities dispatched per pass: a bounded amount of work even after a flood. */
const DISPATCH_BATCH = 100;

/** What the security notices use. */
export interface SecurityNoticesDeps {
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  notifier: Notifier;
  sealer: Sealer;
  config: Pick<Config, 'securityNotices' | 'brand'>;
}

/** A sign-in from a device and network the identity has not used lately (sign-ins.ts). */
export interface SignInNotice {
  identityId: string;
  sessionId: string;
  at: Date;
  userAgent: string | null;
  ip: string | null;
}

/**
 * Whether this Node's AsyncLocalStorage rides on async hooks: Node 20 and 22 (and 24 started with
 * --no-async-context-frame). There a storage's first run() turns on a hook that every promise of
 * the process then pays for, whatever request it belongs to, for as long as any storage is
 * enabled: about 18% of the cheapest answer's throughput, measured on Node 20 (docs/performance.md).
 * Node 24's own storage costs nothing when unused, and its disable() only clears the current
 * context, so it is left alone there.
 */
const STORAGE_ON_HOOKS = '_enable' in AsyncLocalStorage.prototype;

/** The request a change was made by: where it came from, and whom to tell once it is answered. */
interface RequestScope {
  ip: string | null;
  userAgent: string | null;
  identities: Set<string>;
  /** The handler answered without a promise: the scope is left when the answer has gone. */
  heldUntilAnswered: boolean;
}

/**
 * Notices, in two streams with a window each per identity:
 * - changes: every change an attacker holding a session would make (password, second factor,
 *   passkey, recovery codes, an address, a linked provider) is told to the owner, on every
 *   verified address and phone, and on the address just removed. The change and its queued notice
 *   commit together (an observer of the audit log, whose append is in the change's transaction).
 * - sign-ins: a session opened from a device and network not seen lately (sign-ins.ts decides
 *   which) is told on the identity's first verified identifier a channel reaches.
 * The first notice of a window is sent right after the answer; later ones during the window are
 * held and sent as one message when it ends. Only the identity's own sign-ins and changes spend
 * a window: a notice never counts against, and is never dropped by, the per-destination message
 * limit, which strangers' requests (recovery starts, sign-up attempts) can spend. No link, no code.
 */
export class SecurityNotices {
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly scope = new AsyncLocalStorage<RequestScope>();
  /** Handlers running inside the scope now; at 0 the storage is switched off (STORAGE_ON_HOOKS). */
  private inScope = 0;

  constructor(private readonly deps: SecurityNoticesDeps) {}

  /** The audit-log observer that queues a notice in the change's own transaction. */
  observer(): AuditObserver {
    return (trx, event, occurredAt) => this.enqueue(trx, event, occurredAt);
  }

  private async enqueue(trx: Executor, event: AuditEvent, occurredAt: Date): Promise<void> {
    // An operator's erasure (docs/admin.md) takes the identity's queued notices with it.
    if (event.name === 'identity.erased' && event.outcome === 'success' && event.target) {
      await forgetIdentity(trx, event.target);
      return;
    }
    if (!this.deps.config.securityNotices) return;
    const notice = noticeFor(event);
    if (!notice) return;
    const id = randomUUID();
    let sealedDestination: string | null = null;
    if (notice.removedIdentifierId) {
      const removed = await identifierById(trx, notice.identityId, notice.removedIdentifierId);
      // Bound to this row: a sealed address cannot be moved to another identity's notice.
      if (removed) sealedDestination = this.deps.sealer.seal(`${removed.type}:${removed.value}`, id);
    }
    const scope = this.scope.getStore();
    await insertNotice(trx, {
      id,
      identityId: notice.identityId,
      stream: 'change',
      kind: notice.kind,
      sessionId: null,
      occurredAt,
      device: scope?.userAgent ? describeDevice(scope.userAgent).description : null,
      ipAddress: scope?.ip ?? null,
      sealedDestination,
    });
    scope?.identities.add(notice.identityId);
  }

  /**
   * Queues a new-sign-in notice and sends it at once unless the identity's sign-in window is open
   * (then it leaves with the others when the window ends). Resolves once it is sent or queued.
   */
  async signedIn(notice: SignInNotice): Promise<void> {
    await insertNotice(this.deps.database.db, {
      id: randomUUID(),
      identityId: notice.identityId,
      stream: 'sign_in',
      kind: 'new_sign_in',
      sessionId: notice.sessionId,
      occurredAt: notice.at,
      device: describeDevice(notice.userAgent).description,
      ipAddress: notice.ip,
      sealedDestination: null,
    });
    await this.dispatch(notice.identityId, 'sign_in');
  }

  /**
   * Sends the identity's queued notices of one stream as one message when no window of that
   * stream is open, and opens one. Returns whether this call claimed the batch (false: nothing
   * queued, or a window is open).
   */
  async dispatch(identityId: string, stream: NoticeStream = 'change'): Promise<boolean> {
    const now = this.deps.clock.now();
    const endsAt = new Date(now.getTime() + NOTICE_WINDOW_SECONDS * 1000);
    const batch = await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await claimWindow(trx, identityId, stream, now, endsAt))) return [];
      return takeQueued(trx, identityId, stream);
    });
    if (batch.length === 0) return false;
    if (stream === 'sign_in') await this.sendSignIns(identityId, batch);
    else await this.sendChanges(identityId, batch);
    return true;
  }

  /**
   * The owner deleted the account (docs/security.md, "Notices"): one message to each verified
   * address it had, read under the erasure's lock before they were deleted and handed here after
   * the commit. Sent at once, never queued: the erasure takes the identity's queued notices with
   * it, and no row may keep the addresses. SECURITY_NOTICES governs it like every change notice.
   * Returns at once; `idle()` waits for it.
   */
  accountDeleted(
    destinations: ReadonlyArray<{ type: ChannelType; value: string }>,
    locale: Locale,
    at: Date,
    from: { ip: string | null; userAgent: string | null },
  ): void {
    if (!this.deps.config.securityNotices || destinations.length === 0) return;
    const { brand } = this.deps.config;
    const email = deletionEmail(locale, brand, {
      at,
      device: from.userAgent ? describeDevice(from.userAgent).description : null,
      ipAddress: from.ip,
    });
    const sms = deletionSms(locale, brand);
    this.track(this.sendToEach(destinations, email, sms, 'account deletion notice not delivered'));
  }

  /** One pass of the dispatcher: every window that has ended with notices behind it. */
  async dispatchDue(): Promise<number> {
    const { db } = this.deps.database;
    const now = this.deps.clock.now();
    let sent = 0;
    for (const { identityId, stream } of await dueStreams(db, now, DISPATCH_BATCH)) {
      if (await this.dispatch(identityId, stream)) sent++;
    }
    await sweepWindows(db, now);
    return sent;
  }

  /**
   * Runs a route's handler with the request's scope, so a change it makes knows where it came
   * from. The scope is held until the handler's promise settles: every change the handler makes
   * is awaited inside it (the notice is queued by the audit log's append, in the change's own
   * transaction). A handler that answers without a promise holds it until the answer has gone.
   */
  runInScope<T>(request: FastifyRequest, handler: () => T): T {
    const { ip, userAgent } = requestMeta(request);
    const scope: RequestScope = { ip, userAgent, identities: new Set(), heldUntilAnswered: false };
    scopes.set(request, scope);
    this.inScope++;
    let result: T;
    try {
      result = this.scope.run(scope, handler);
    } catch (err) {
      this.leaveScope();
      throw err;
    }
    if (!isThenable(result)) {
      scope.heldUntilAnswered = true;
      return result;
    }
    return result.then(
      (value) => {
        this.leaveScope();
        return value;
      },
      (err: unknown) => {
        this.leaveScope();
        throw err;
      },
    ) as T;
  }

  /**
   * On Node 20 and 22, switches the storage off when no handler is inside it, so that the answers
   * and promises that follow stop paying for the async hook it turned on; its next run() turns it
   * on again. A handler still inside holds it on, so no change loses its device and address.
   */
  private leaveScope(): void {
    this.inScope--;
    if (this.inScope === 0 && STORAGE_ON_HOOKS) this.scope.disable();
  }

  /** After the answer: the first change of a window leaves now; returns at once. */
  afterResponse(request: FastifyRequest): void {
    const scope = scopes.get(request);
    if (!scope) return;
    if (scope.heldUntilAnswered) {
      scope.heldUntilAnswered = false;
      this.leaveScope();
    }
    for (const identityId of scope.identities) this.track(this.dispatch(identityId));
  }

  /** Starts a dispatcher pass in the background (the periodic timer). */
  tick(): void {
    this.track(this.dispatchDue());
  }

  /** Resolves once every send under way has finished (tests, shutdown). */
  async idle(): Promise<void> {
    // An answer's onResponse may still be on its way to starting its dispatch.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private track(job: Promise<unknown>): void {
    const guarded = job.catch((err: unknown) => {
      // Never an address or a message: only that it failed and the error's class.
      this.deps.log.warn({ errorClass: (err as Error)?.name ?? 'Error' }, 'security notice failed');
    });
    this.inFlight.add(guarded);
    void guarded.finally(() => this.inFlight.delete(guarded));
  }

  /**
   * A batch of new sign-ins goes to the identity's first verified identifier a channel reaches, as
   * a single notice always has; once delivered, each sign-in's history entry records it.
   */
  private async sendSignIns(identityId: string, batch: QueuedNotice[]): Promise<void> {
    const { db } = this.deps.database;
    const to = (await verifiedIdentifiers(db, identityId)).find((i) => this.deps.notifier.canDeliver(i.type));
    if (!to) return;
    // In the identity's language (identities.locale), as every message to it.
    const locale = await identityLocale(db, identityId);
    const { subject, text } = signInEmail(locale, this.deps.config.brand, batch);
    const result = await this.deps.notifier.send({ to: to.value, type: to.type, subject, text });
    if (result.status !== 'DELIVERED') {
      this.deps.log.warn({ channel: to.type }, 'new sign-in notice not delivered');
      return;
    }
    const sentAt = this.deps.clock.now();
    for (const n of batch) if (n.sessionId) await markNoticeSent(db, n.sessionId, sentAt);
  }

  private async sendChanges(identityId: string, batch: QueuedNotice[]): Promise<void> {
    const destinations = new Map<string, { type: ChannelType; value: string }>();
    for (const i of await verifiedIdentifiers(this.deps.database.db, identityId)) {
      destinations.set(`${i.type}:${i.value}`, { type: i.type, value: i.value });
    }
    for (const n of batch) {
      if (!n.sealedDestination) continue;
      let opened: string;
      try {
        opened = this.deps.sealer.open(n.sealedDestination, n.id);
      } catch {
        this.deps.log.warn({}, 'security notice: a removed address could not be opened');
        continue;
      }
      const at = opened.indexOf(':');
      const type = opened.slice(0, at);
      if (type === 'email' || type === 'phone')
        destinations.set(opened, { type, value: opened.slice(at + 1) });
    }
    // In the identity's language, a removed address's notice included: it was the owner's.
    const locale = await identityLocale(this.deps.database.db, identityId);
    const email = changesEmail(locale, this.deps.config.brand, batch);
    const sms = changesSms(locale, this.deps.config.brand, batch);
    await this.sendToEach(destinations.values(), email, sms, 'security notice not delivered');
  }

  /** One message to each address a channel reaches: the email, or its short form by SMS. */
  private async sendToEach(
    destinations: Iterable<{ type: ChannelType; value: string }>,
    email: Message,
    sms: string,
    notDelivered: string,
  ): Promise<void> {
    for (const to of destinations) {
      if (!this.deps.notifier.canDeliver(to.type)) continue;
      const result = await this.deps.notifier.send(
        to.type === 'email'
          ? { to: to.value, type: 'email', subject: email.subject, text: email.text }
          : { to: to.value, type: 'phone', subject: email.subject, text: sms },
      );
      if (result.status !== 'DELIVERED') this.deps.log.warn({ channel: to.type }, notDelivered);
    }
  }
}

const scopes = new WeakMap<FastifyRequest, RequestScope>();

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/**
 * Wires the notices into the app: each request's changes know its device and address; after the
 * answer, the first change of a window is sent; every DISPATCH_SECONDS each instance sends the
 * batches whose window has ended.
 */
export function installSecurityNotices(app: FastifyInstance, notices: SecurityNotices): void {
  // Only on routes that can change something: a GET (health probes, session reads, every page
  // asset) never makes a change, so it pays for no scope and no hook (docs/performance.md).
  const leave: onResponseHookHandler = (request, _reply, done) => {
    notices.afterResponse(request);
    done();
  };
  app.addHook('onRoute', (route) => {
    if (onlySafeMethods(route)) return;
    // The handler runs inside the scope (after the body is read and the route's guards), and the
    // scope knows when the handler is done with it.
    const handler = route.handler;
    route.handler = function scoped(this: FastifyInstance, request, reply) {
      return notices.runInScope(request, () => handler.call(this, request, reply));
    };
    route.onResponse = [...[route.onResponse ?? []].flat(), leave];
  });
  let timer: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    timer = setInterval(() => notices.tick(), DISPATCH_SECONDS * 1000);
    timer.unref();
  });
  // The app's own onClose waits for sends under way before the channels close (src/app.ts).
  app.addHook('onClose', async () => {
    if (timer) clearInterval(timer);
  });
}
