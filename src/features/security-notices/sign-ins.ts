import type { FastifyBaseLogger, FastifyInstance, onResponseHookHandler } from 'fastify';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Database } from '../../platform/db/database.js';
import { requestMeta } from '../../platform/http/auth.js';
import { onlySafeMethods } from '../../platform/http/safe-methods.js';
import { addressPrefix, deviceFamily } from '../sessions/devices.js';
import { signInOrigins } from '../sessions/repository.js';
import type { SecurityNotices } from './service.js';

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
  /** Queues the notice and sends it, within the identity's own bound (service.ts). */
  notices: Pick<SecurityNotices, 'signedIn'>;
  config: Pick<Config, 'signInNotices'>;
}

/**
 * New-sign-in notices: after a sign-in that opened a session from a device (browser, OS, device
 * type) and address prefix (IPv4 /24, IPv6 /64) this identity has not signed in from in the last
 * 90 days, a message goes to its first verified identifier that a channel can reach: what, when,
 * where from, and how to end it. No link in it signs anyone in. The very first sign-in of an
 * identity has nothing to compare with and sends none. It runs after the answer has gone out, so
 * it never delays or fails the sign-in; a sent notice is recorded on the sign-in's history entry.
 * It never counts against the destination's message window, which a stranger's recovery starts
 * can spend: the first new sign-in of the identity's notice window is sent at once, later ones in
 * the window are sent together when it ends (SecurityNotices.signedIn). Never dropped.
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
    await this.deps.notices.signedIn({ identityId, sessionId, at: now, ...from });
  }
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
