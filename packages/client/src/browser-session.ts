import { type EndReason, IdentityClient, type IdentityClientOptions, type SessionLink } from './client.js';
import { isIdentityError } from './errors.js';
import { readClaims } from './jwt.js';
import { type LockMode, type RenewalLock, renewalLock } from './lock.js';
import type { BrowserSessionGrant, OrganizationSwitch, SessionGrant } from './types.js';

/** What a `BrowserSessionManager` tells its listeners. No event carries a token. */
export type BrowserSessionEvent =
  | {
      status: 'signed-in';
      /**
       * `sign-in`: a sign-in here was handed over; `renewal`: this page renewed with the cookie;
       * `elsewhere`: another page of the origin signed in (this page renews when it next needs a token).
       */
      reason: 'sign-in' | 'renewal' | 'elsewhere';
    }
  | { status: 'signed-out'; reason: EndReason };

export interface BrowserSessionManagerOptions {
  /** The client to act through, or the options to make one; its `baseUrl` must be the page's own origin. */
  client: IdentityClient | IdentityClientOptions;
  /**
   * Names the renewal lock and the channel on which pages tell each other of sign-ins and
   * sign-outs (default `identity-service.browser-session`): every page of the origin must use the
   * same key.
   */
  key?: string;
  /** Renew this many seconds before the access token expires (default 30, at most a quarter of its lifetime). */
  renewBeforeSeconds?: number;
  /** How renewals are serialised between pages (default: Web Locks, else BroadcastChannel, else this page only). */
  lockMode?: LockMode;
  /** The local clock (default Date.now); only differences of it are used. */
  now?: () => number;
}

/** The message pages of one origin exchange: never a token, only what happened. */
type Signal = { type: 'signed-in' | 'signed-out' };

interface Held {
  accessToken: string;
  receivedAt: number;
  accessExpiresAt: number;
}

const DEFAULT_KEY = 'identity-service.browser-session';

/**
 * The session of a page served by the identity service itself (the hosted pages), with the refresh
 * token in the service's HttpOnly cookie instead of anywhere a script can read it
 * (docs/security.md, "The hosted pages' cookie"):
 *
 * - a sign-in's grant is handed over at once (POST /browser-session): the service rotates the
 *   refresh token into the cookie and answers the access token only, which this page keeps in
 *   memory;
 * - renewals send no token (POST /browser-session/renewals, the cookie goes by itself), before the
 *   access token expires and on a 401 once;
 * - single flight: the calls of a page share one renewal, and the pages of the origin take turns
 *   through the same Web Lock as `SessionManager`; each page holds its own access token, so a page
 *   renewing after another is an ordinary rotation of the cookie, never a replay;
 * - sign-ins and sign-outs are told to the other pages on a BroadcastChannel (no secret in it), so a
 *   sign-out in one tab signs every tab out.
 *
 * ```ts
 * const session = new BrowserSessionManager({ client: { baseUrl: location.origin } });
 * if (await session.isSignedIn()) showAccount(await session.client.context());
 * ```
 */
export class BrowserSessionManager implements SessionLink {
  readonly client: IdentityClient;
  readonly key: string;
  /** The mechanism that serialises renewals between pages. */
  readonly lockMode: LockMode;
  private readonly lock: RenewalLock;
  private readonly now: () => number;
  private readonly renewBeforeMs: number;
  private readonly listeners = new Set<(event: BrowserSessionEvent) => void>();
  private readonly channel: BroadcastChannel | undefined;
  private flight: Promise<{ accessToken: string; renewed: boolean } | undefined> | undefined;
  /** This page's access token, memory only. */
  private held: Held | null = null;
  /** What this page knows: `unknown` until the service was asked (or after another page signed in). */
  private state: 'unknown' | 'signed-in' | 'signed-out' = 'unknown';

  constructor(options: BrowserSessionManagerOptions) {
    this.client =
      options.client instanceof IdentityClient ? options.client : new IdentityClient(options.client);
    this.key = options.key ?? DEFAULT_KEY;
    this.now = options.now ?? Date.now;
    this.renewBeforeMs = (options.renewBeforeSeconds ?? 30) * 1000;
    this.lock = renewalLock(this.key, options.lockMode);
    this.lockMode = this.lock.mode;
    this.channel =
      typeof BroadcastChannel === 'function'
        ? new BroadcastChannel(`identity-service:signal:${this.key}`)
        : undefined;
    if (this.channel) this.channel.onmessage = (event: MessageEvent<Signal>) => this.heard(event.data);
    this.client.attachSession(this);
  }

  /** Listens to sign-ins, renewals and sign-outs (here, or told by another page); returns the unsubscriber. */
  onChange(listener: (event: BrowserSessionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Whether this browser is signed in. The first call (and the first after another page signed in)
   * asks the service by renewing with the cookie; later calls answer from what this page knows.
   */
  async isSignedIn(): Promise<boolean> {
    if (this.state === 'unknown' && !this.held) await this.renewShared(undefined);
    return this.state !== 'signed-out' && (this.state === 'signed-in' || this.held !== null);
  }

  /** A live access token, renewed first when it is about to expire; undefined when signed out. */
  async accessToken(): Promise<string | undefined> {
    if (this.held && !this.expiring(this.held)) return this.held.accessToken;
    if (this.state === 'signed-out') return undefined;
    return (await this.renewShared(this.held?.accessToken))?.accessToken;
  }

  /**
   * Renews from the cookie now, whatever this page holds: another tab of this browser may have
   * signed in meanwhile (a sign-in link opened in a new tab sets the shared cookie). True when this
   * browser is signed in.
   */
  async renewFromCookie(): Promise<boolean> {
    return (await this.renewShared('')) !== undefined;
  }

  /** SessionLink: the service refused `failed` with 401. */
  recover(failed: string): Promise<{ accessToken: string; renewed: boolean } | undefined> {
    return this.renewShared(failed);
  }

  /**
   * SessionLink: a sign-in produced `grant`; its refresh token is handed to the cookie at once and
   * then forgotten (the service has rotated it, so the value seen here is spent).
   */
  async grantReceived(grant: SessionGrant): Promise<void> {
    const answer = await this.lock.exclusive(() => this.client.handOverBrowserSession(grant.refreshToken));
    this.hold(answer);
    this.state = 'signed-in';
    this.post({ type: 'signed-in' });
    this.emit({ status: 'signed-in', reason: 'sign-in' });
  }

  /**
   * SessionLink: `switchOrganization` answered a new access token for the same session (the cookie's
   * refresh token is not rotated by it): this page holds it instead of `replacing`, unless it renewed
   * meanwhile (the renewal re-read the active organization).
   */
  async accessTokenReplaced(grant: OrganizationSwitch, replacing: string): Promise<void> {
    await this.lock.exclusive(async () => {
      if (this.held?.accessToken === replacing) this.hold(grant);
    });
  }

  /** SessionLink: the session ended at the service; the cookie is cleared and every page told. */
  async ended(reason: EndReason): Promise<void> {
    this.held = null;
    this.state = 'signed-out';
    // Clears the cookie (its session already ended): best effort, a dead cookie is refused anyway.
    await this.lock.exclusive(() => this.client.endBrowserSession().catch(() => undefined));
    this.post({ type: 'signed-out' });
    this.emit({ status: 'signed-out', reason });
  }

  /**
   * Signs this browser out: the cookie's session ends and the cookie is cleared, even when this
   * page holds no access token. Every page of the origin hears `signed-out`.
   */
  async signOut(): Promise<void> {
    this.held = null;
    this.state = 'signed-out';
    try {
      await this.lock.exclusive(() => this.client.endBrowserSession());
    } finally {
      this.post({ type: 'signed-out' });
      this.emit({ status: 'signed-out', reason: 'signed_out' });
    }
  }

  /** Stops listening to other pages. */
  close(): void {
    this.channel?.close();
    this.lock.close();
    this.listeners.clear();
  }

  private heard(signal: Signal | undefined): void {
    if (signal?.type === 'signed-out') {
      const was = this.state === 'signed-in' || this.held !== null;
      this.held = null;
      this.state = 'signed-out';
      if (was) this.emit({ status: 'signed-out', reason: 'elsewhere' });
    } else if (signal?.type === 'signed-in') {
      // Another page's sign-in may have replaced this page's session (one per browser): its
      // access token is dropped, and the next call renews with the new cookie.
      this.held = null;
      this.state = 'unknown';
      this.emit({ status: 'signed-in', reason: 'elsewhere' });
    }
  }

  private post(signal: Signal): void {
    try {
      this.channel?.postMessage(signal);
    } catch {
      // A closed channel: no other page to tell.
    }
  }

  private emit(event: BrowserSessionEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private hold(grant: BrowserSessionGrant): void {
    const receivedAt = this.now();
    const { iat, exp } = readClaims(grant.accessToken);
    // Without readable times, renew on the first 401 only.
    const lifetimeMs = typeof iat === 'number' && typeof exp === 'number' ? (exp - iat) * 1000 : Infinity;
    this.held = { accessToken: grant.accessToken, receivedAt, accessExpiresAt: receivedAt + lifetimeMs };
  }

  private expiring(held: Held): boolean {
    const lifetime = held.accessExpiresAt - held.receivedAt;
    const margin = Math.min(this.renewBeforeMs, lifetime / 4);
    return this.now() >= held.accessExpiresAt - margin;
  }

  /**
   * One renewal for every caller of this page (the flight), and one page at a time through the
   * lock, so no two requests ever carry the same cookie value. `stale` is the access token the
   * caller found wanting: a different, unexpired one held now was renewed meanwhile by this page.
   */
  private renewShared(
    stale: string | undefined,
  ): Promise<{ accessToken: string; renewed: boolean } | undefined> {
    if (this.flight) return this.flight;
    const flight = this.lock.exclusive(async () => {
      const held = this.held;
      if (held && held.accessToken !== stale && !this.expiring(held)) {
        return { accessToken: held.accessToken, renewed: false };
      }
      let answer: BrowserSessionGrant;
      try {
        answer = await this.client.renewBrowserSession();
      } catch (error) {
        if (isIdentityError(error) && error.code === 'identity.renewal_refused') {
          const was = this.state === 'signed-in' || this.held !== null;
          this.held = null;
          this.state = 'signed-out';
          // Only a page that was signed in tells the others: a page that merely asked (on load)
          // must not sign out a session another page is handing over.
          if (was) {
            this.post({ type: 'signed-out' });
            this.emit({ status: 'signed-out', reason: 'renewal_refused' });
          }
          return undefined;
        }
        // No answer: whether the cookie rotated is unknown; the next call asks again.
        throw error;
      }
      this.hold(answer);
      this.state = 'signed-in';
      this.emit({ status: 'signed-in', reason: 'renewal' });
      return { accessToken: answer.accessToken, renewed: true };
    });
    this.flight = flight;
    const clear = () => {
      if (this.flight === flight) this.flight = undefined;
    };
    flight.then(clear, clear);
    return flight;
  }
}
