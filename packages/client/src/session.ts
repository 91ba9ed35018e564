import { type EndReason, IdentityClient, type IdentityClientOptions, type SessionLink } from './client.js';
import { isIdentityError } from './errors.js';
import { readClaims } from './jwt.js';
import { type LockMode, type RenewalLock, renewalLock } from './lock.js';
import { type GrantStore, memoryStore, type StoredGrant } from './stores.js';
import type { OrganizationSwitch, SessionGrant } from './types.js';

/** What a `SessionManager` tells its listeners. */
export type SessionEvent =
  | {
      status: 'signed-in';
      /**
       * `sign-in`: a sign-in here; `renewal`: this page renewed; `adopted`: another page renewed or
       * signed in; `organization`: this page switched the active organization (a new access token).
       */
      reason: 'sign-in' | 'renewal' | 'adopted' | 'organization';
      grant: SessionGrant;
    }
  | { status: 'signed-out'; reason: EndReason };

export interface SessionManagerOptions {
  /** The client to act through, or the options to make one. The manager attaches itself to it. */
  client: IdentityClient | IdentityClientOptions;
  /** Where the grant lives (default: memory). In a browser, `localStorageStore()` shares it between tabs. */
  store?: GrantStore;
  /**
   * Renew this many seconds before the access token expires (default 30, never more than a quarter
   * of the token's lifetime).
   */
  renewBeforeSeconds?: number;
  /** How renewals are serialised between pages (default: Web Locks, else BroadcastChannel, else this page only). */
  lockMode?: LockMode;
  /** The local clock (default Date.now); only differences of it are used. */
  now?: () => number;
}

/** The longest wait for another page's write to reach this page's copy of the store. */
const STORE_CATCH_UP_MS = 3000;

/**
 * Holds a session grant in a `GrantStore` and keeps its access token alive for an `IdentityClient`:
 *
 * - renews before the access token expires, measured on this device's clock from the moment the
 *   grant arrived plus the token's lifetime (exp - iat), so clock skew does not matter;
 * - renews on a 401 once;
 * - single-flight: concurrent calls in one page share one renewal, and the pages of one origin
 *   take turns through a lock named after the store key (Web Locks, else BroadcastChannel); inside
 *   the lock the store is read again, and a grant another page already renewed is adopted instead
 *   of renewed, so two pages never present the same refresh token;
 * - after `identity.renewal_refused` the grant is cleared and listeners hear `signed-out`.
 *
 * ```ts
 * const session = new SessionManager({ client: { baseUrl: 'https://id.example.com' }, store: localStorageStore() });
 * const client = session.client;
 * await client.signIn({ identifierType: 'email', identifier, password });
 * const me = await client.context();
 * ```
 */
export class SessionManager implements SessionLink {
  readonly client: IdentityClient;
  readonly store: GrantStore;
  /** The mechanism that serialises renewals between pages. */
  readonly lockMode: LockMode;
  private readonly lock: RenewalLock;
  private readonly now: () => number;
  private readonly renewBeforeMs: number;
  private readonly listeners = new Set<(event: SessionEvent) => void>();
  private readonly unsubscribe: () => void;
  private flight: Promise<{ accessToken: string; renewed: boolean } | undefined> | undefined;
  /** The access token this page last saw, to tell a grant another page stored. */
  private known: string | undefined;

  constructor(options: SessionManagerOptions) {
    this.client =
      options.client instanceof IdentityClient ? options.client : new IdentityClient(options.client);
    this.store = options.store ?? memoryStore();
    this.now = options.now ?? Date.now;
    this.renewBeforeMs = (options.renewBeforeSeconds ?? 30) * 1000;
    this.lock = renewalLock(this.store.key, options.lockMode);
    this.lockMode = this.lock.mode;
    this.client.attachSession(this);
    this.unsubscribe =
      this.store.subscribe?.((value) => {
        if (value === null) {
          if (this.known !== undefined) {
            this.known = undefined;
            this.emit({ status: 'signed-out', reason: 'elsewhere' });
          }
        } else if (value.grant.accessToken !== this.known) {
          this.known = value.grant.accessToken;
          this.emit({ status: 'signed-in', reason: 'adopted', grant: value.grant });
        }
      }) ?? (() => {});
  }

  /** Listens to sign-ins, renewals and sign-outs (in this page, or seen from another); returns the unsubscriber. */
  onChange(listener: (event: SessionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The stored grant, or null when signed out. */
  async grant(): Promise<SessionGrant | null> {
    return (await this.store.load())?.grant ?? null;
  }

  async isSignedIn(): Promise<boolean> {
    return (await this.store.load()) !== null;
  }

  /** A live access token, renewed first when it is about to expire; undefined when signed out. */
  async accessToken(): Promise<string | undefined> {
    const stored = await this.store.load();
    if (!stored) return undefined;
    if (!this.expiring(stored)) return stored.grant.accessToken;
    return (await this.renewShared(stored.grant.accessToken))?.accessToken;
  }

  /**
   * Renews now (sharing a renewal already under way here or in another page). Undefined when
   * signed out, or when the service refused the renewal (the grant is then cleared).
   */
  async renew(): Promise<SessionGrant | undefined> {
    const stored = await this.store.load();
    if (!stored) return undefined;
    await this.renewShared(stored.grant.accessToken);
    return (await this.store.load())?.grant;
  }

  /** SessionLink: the service refused `failed` with 401. */
  recover(failed: string): Promise<{ accessToken: string; renewed: boolean } | undefined> {
    return this.renewShared(failed);
  }

  /** SessionLink: keeps the grant of a sign-in (the bound client calls this). */
  async grantReceived(grant: SessionGrant): Promise<void> {
    const stored = this.toStored(grant);
    await this.lock.exclusive(async () => {
      await this.store.save(stored);
    });
    this.known = grant.accessToken;
    this.emit({ status: 'signed-in', reason: 'sign-in', grant });
  }

  /**
   * SessionLink: `switchOrganization` answered a new access token for the same session. It replaces
   * the stored one (`replacing`, the token the switch was made with), the refresh token kept; a
   * grant that changed meanwhile (a sign-in, a sign-out, another page's renewal) is left as it is.
   * A renewal re-reads the active organization, so the next one carries it whatever happened here.
   */
  async accessTokenReplaced(grant: OrganizationSwitch, replacing: string): Promise<void> {
    let replaced: SessionGrant | undefined;
    await this.lock.exclusive(async () => {
      const stored = await this.store.load();
      if (!stored || stored.grant.accessToken !== replacing) return;
      replaced = {
        ...stored.grant,
        accessToken: grant.accessToken,
        accessTokenExpiresAt: grant.accessTokenExpiresAt,
        sessionExpiresAt: grant.sessionExpiresAt,
      };
      await this.store.save(this.toStored(replaced));
    });
    if (!replaced) return;
    this.known = replaced.accessToken;
    this.emit({ status: 'signed-in', reason: 'organization', grant: replaced });
  }

  /** SessionLink: the session ended at the service; forget it. */
  async ended(reason: EndReason): Promise<void> {
    await this.lock.exclusive(async () => {
      await this.store.clear();
    });
    this.signedOut(reason);
  }

  /** Stops listening to the store and to other pages. */
  close(): void {
    this.unsubscribe();
    this.lock.close();
    this.listeners.clear();
  }

  private emit(event: SessionEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private signedOut(reason: EndReason): void {
    this.known = undefined;
    this.emit({ status: 'signed-out', reason });
  }

  private toStored(grant: SessionGrant): StoredGrant {
    const receivedAt = this.now();
    const { iat, exp } = readClaims(grant.accessToken);
    // Without readable times, renew on the first 401 only.
    const lifetimeMs = typeof iat === 'number' && typeof exp === 'number' ? (exp - iat) * 1000 : Infinity;
    return { grant, receivedAt, accessExpiresAt: receivedAt + lifetimeMs };
  }

  /**
   * The stored grant once it no longer holds `spent` (another page's write arriving), or 'timeout'
   * after STORE_CATCH_UP_MS: then the call fails with its 401 rather than replay a token.
   */
  private async newerThan(spent: string): Promise<StoredGrant | null | 'timeout'> {
    const until = Date.now() + STORE_CATCH_UP_MS;
    for (;;) {
      const stored = await this.store.load();
      if (!stored || stored.grant.refreshToken !== spent) return stored;
      if (Date.now() >= until) return 'timeout';
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private expiring(stored: StoredGrant): boolean {
    const lifetime = stored.accessExpiresAt - stored.receivedAt;
    const margin = Math.min(this.renewBeforeMs, lifetime / 4);
    return this.now() >= stored.accessExpiresAt - margin;
  }

  /**
   * One renewal for every caller of this page (the flight) and, through the lock, for every page:
   * `stale` is the access token the caller found wanting. Inside the lock the store is read again:
   * a different, unexpired token there was renewed (or signed in) by another page and is adopted.
   */
  private renewShared(stale: string): Promise<{ accessToken: string; renewed: boolean } | undefined> {
    if (this.flight) return this.flight;
    const flight = this.lock.exclusive(async () => {
      let stored = await this.store.load();
      // The previous holder spent this token, and this page's copy of the store has not caught up
      // yet: wait for its write instead of presenting the token again (a replay ends the session).
      if (stored && (await this.lock.isSpent(stored.grant.refreshToken))) {
        const caughtUp = await this.newerThan(stored.grant.refreshToken);
        if (caughtUp === 'timeout') return undefined;
        stored = caughtUp;
      }
      if (!stored) {
        if (this.known !== undefined) this.signedOut('elsewhere');
        return undefined;
      }
      if (stored.grant.accessToken !== stale && !this.expiring(stored)) {
        if (stored.grant.accessToken !== this.known) {
          this.known = stored.grant.accessToken;
          this.emit({ status: 'signed-in', reason: 'adopted', grant: stored.grant });
        }
        return { accessToken: stored.grant.accessToken, renewed: false };
      }
      let grant: SessionGrant;
      try {
        grant = await this.client.renew(stored.grant.refreshToken);
      } catch (error) {
        if (isIdentityError(error) && error.code === 'identity.renewal_refused') {
          await this.store.clear();
          this.signedOut('renewal_refused');
          return undefined;
        }
        // No answer: whether the token was spent is unknown; it stays in the store.
        throw error;
      }
      await this.store.save(this.toStored(grant));
      await this.lock.markSpent(stored.grant.refreshToken);
      this.known = grant.accessToken;
      this.emit({ status: 'signed-in', reason: 'renewal', grant });
      return { accessToken: grant.accessToken, renewed: true };
    });
    this.flight = flight;
    const clear = () => {
      if (this.flight === flight) this.flight = undefined;
    };
    flight.then(clear, clear);
    return flight;
  }
}
