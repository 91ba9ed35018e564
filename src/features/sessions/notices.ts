import type { FastifyBaseLogger, FastifyInstance, onResponseHookHandler } from 'fastify';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Database } from '../../platform/db/database.js';
import { requestMeta } from '../../platform/http/auth.js';
import { onlySafeMethods } from '../../platform/http/safe-methods.js';
import type { Signals } from '../../platform/metrics/signals.js';
import type { Notifier } from '../../platform/notify/notifier.js';
import type { MessageLimits } from '../../platform/rate-limit/guess-budget.js';
import { destinationSubject } from '../../platform/rate-limit/guess-budget.js';
import { verifiedIdentifiers } from '../identities/repository.js';
import { addressPrefix, describeDevice, deviceFamily } from './devices.js';
import { markNoticeSent, signInOrigins } from './repository.js';

/**
 * A place counts as known for 90 days after the last sign-in from it (docs/api.md, "4. New sign-in
 * notices").
 */
export const NOTICE_LOOKBACK_DAYS = 90;
// Distinct (address, user agent) pairs compared; an identity with more is compared with its newest.
const ORIGINS_COMPARED = 200;

/** What a new-sign-in notice uses. */
export interface SignInNoticesDeps {
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  messages: MessageLimits;
  notifier: Notifier;
  signals: Signals;
  config: Pick<Config, 'signInNotices'>;
}

/**
 * New-sign-in notices: after a sign-in that opened a session from a device (browser, OS, device
 * type) and address prefix (IPv4 /24, IPv6 /64) this identity has not signed in from in the last
 * 90 days, a message goes to its first verified identifier that a channel can reach: what, when,
 * where from, and how to end it. No link in it signs anyone in. The very first sign-in of an
 * identity has nothing to compare with and sends none. It runs after the answer has gone out, so
 * it never delays or fails the sign-in; a sent notice is recorded on the sign-in's history entry.
 * It counts against its destination's message window, and past it is dropped (never sent late).
 */
export class SignInNotices {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: SignInNoticesDeps) {}

  /** Starts the notice for a session just opened; returns at once. */
  afterSignIn(identityId: string, sessionId: string, from: { ip: string | null; userAgent: string | null }) {
    if (!this.deps.config.signInNotices) return;
    const job = this.notify(identityId, sessionId, from).catch((err: unknown) => {
      // Never the address or the message: only that it failed and the error's class.
      this.deps.log.warn({ errorClass: (err as Error)?.name ?? 'Error' }, 'new sign-in notice failed');
    });
    this.inFlight.add(job);
    void job.finally(() => this.inFlight.delete(job));
  }

  /** Resolves once every notice under way has been sent or given up (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  private async notify(
    identityId: string,
    sessionId: string,
    from: { ip: string | null; userAgent: string | null },
  ): Promise<void> {
    const { db } = this.deps.database;
    const now = this.deps.clock.now();
    const origins = await signInOrigins(db, identityId, sessionId, ORIGINS_COMPARED);
    if (origins.length === 0) return;
    const since = now.getTime() - NOTICE_LOOKBACK_DAYS * 86400_000;
    const device = deviceFamily(from.userAgent);
    const prefix = addressPrefix(from.ip);
    const known = origins.some(
      (o) =>
        new Date(o.lastAt).getTime() >= since &&
        deviceFamily(o.userAgent) === device &&
        addressPrefix(o.ipAddress) === prefix,
    );
    if (known) return;
    const to = (await verifiedIdentifiers(db, identityId)).find((i) => this.deps.notifier.canDeliver(i.type));
    if (!to) return;
    // Notices share the destination's window with every other message (RATE_LIMIT_SENDS_A_MESSAGE),
    // so sign-ins from new places cannot flood an inbox. Past it the notice is dropped, not delayed:
    // the sign-in was answered long ago. The history entry keeps noticeSentAt null, which is what
    // the owner sees; the log line and the metric tell the operator, never the address.
    if (!(await this.deps.messages.admits([destinationSubject(to)]))) {
      this.deps.signals.refused('messages:notice');
      this.deps.log.warn(
        { channel: to.type },
        'new sign-in notice dropped: its destination is past its message limit',
      );
      return;
    }
    const result = await this.deps.notifier.send({
      to: to.value,
      type: to.type,
      subject: 'New sign-in to your account',
      text: noticeText(now, describeDevice(from.userAgent).description, from.ip),
    });
    if (result.status !== 'DELIVERED') {
      this.deps.log.warn({ channel: to.type }, 'new sign-in notice not delivered');
      return;
    }
    await markNoticeSent(db, sessionId, this.deps.clock.now());
  }
}

function noticeText(when: Date, device: string, ip: string | null): string {
  return [
    'Someone signed in to your account from a device or network not seen in the last 90 days.',
    `When: ${when.toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    `Device: ${device}`,
    `From: ${ip ?? 'unknown address'}`,
    'If this was you, there is nothing to do.',
    'If it was not, sign in, end that session under Devices (or sign out everywhere), and change your password.',
  ].join('\n');
}

/**
 * Hands every session a request opened to the notices once the answer has gone out (onResponse),
 * whichever route opened it (password, provider, second step, passkey).
 */
export function installSignInNotices(app: FastifyInstance, notices: SignInNotices): void {
  // A callback hook (no promise per answer), and only on routes that can open a session: a GET,
  // HEAD or OPTIONS never does, so health probes, reads and page assets pay for no hook.
  const after: onResponseHookHandler = (request, reply, done) => {
    const opened = request.openedSession;
    if (opened && reply.statusCode === 201) {
      const { ip, userAgent } = requestMeta(request);
      notices.afterSignIn(opened.identityId, opened.sessionId, { ip, userAgent });
    }
    done();
  };
  app.addHook('onRoute', (route) => {
    if (onlySafeMethods(route)) return;
    route.onResponse = [...[route.onResponse ?? []].flat(), after];
  });
}
