/** Runs `task` while no other holder of the same lock runs one (in this page and, where possible, in every page of the origin). */
export type Exclusive = <T>(task: () => Promise<T>) => Promise<T>;

/** Which mechanism serialises renewals between pages. */
export type LockMode = 'web-locks' | 'broadcast-channel' | 'page';

/**
 * The renewal lock of one store key, and its ledger of spent refresh tokens. The ledger exists
 * because a page's view of `localStorage` may lag another page's write by a few milliseconds
 * (Chromium keeps a copy per renderer process and propagates writes asynchronously): inside the
 * lock, a page may still read the refresh token the previous holder just spent. Asking the
 * ledger before presenting a token turns that stale read into a short wait instead of a replay.
 */
export interface RenewalLock {
  readonly mode: LockMode;
  readonly exclusive: Exclusive;
  /** Records that `refreshToken` was presented; call before releasing the lock. */
  markSpent(refreshToken: string): Promise<void>;
  /** Whether any page of the origin recorded `refreshToken` as spent (recently). */
  isSpent(refreshToken: string): Promise<boolean>;
  close(): void;
}

interface LockManagerLike {
  request<T>(name: string, callback: () => Promise<T>): Promise<T>;
  query(): Promise<{ held?: { name?: string }[] }>;
}

/** How long a spent token stays in the ledger: far longer than any storage propagation. */
const SPENT_MEMORY_MS = 60_000;

/** The page's Web Locks manager, when it has one. */
function webLocks(): LockManagerLike | undefined {
  const nav = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator;
  return nav?.locks && typeof nav.locks.request === 'function' ? nav.locks : undefined;
}

/**
 * A 64-bit fingerprint of a token (two FNV-1a passes): names a spent token in the ledger without
 * writing the token itself into a lock name. Not a security boundary: the ledger is visible only
 * to the origin's scripts, which can read the store anyway.
 */
function fingerprint(token: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
}

/** A mutex for one page: tasks run one after another. */
function pageMutex(): Exclusive {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>) => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** Spent fingerprints this page knows of, each forgotten after SPENT_MEMORY_MS. */
function localLedger() {
  const spent = new Map<string, number>();
  return {
    add(fp: string) {
      const now = Date.now();
      for (const [key, at] of spent) if (now - at > SPENT_MEMORY_MS) spent.delete(key);
      spent.set(fp, now);
    },
    has: (fp: string) => spent.has(fp),
  };
}

/**
 * Web Locks: the renewal lock, and the ledger kept as locks too. A page that spends a token takes
 * a lock named after its fingerprint and holds it for a minute; LockManager state lives in the
 * browser, one copy for every page, and the marker is granted before the renewal lock is
 * released (both requests travel the same channel), so the next holder's query sees it.
 */
function webLockRenewal(name: string, locks: LockManagerLike): RenewalLock {
  const releases = new Set<() => void>();
  const ledger = localLedger();
  const marker = (token: string) => `${name}:spent:${fingerprint(token)}`;
  return {
    mode: 'web-locks',
    exclusive: (task) => locks.request(name, task),
    async markSpent(token) {
      ledger.add(fingerprint(token));
      await new Promise<void>((granted) => {
        void locks.request(marker(token), () => {
          granted();
          return new Promise<void>((release) => {
            const done = () => {
              clearTimeout(timer);
              releases.delete(done);
              release();
            };
            const timer = setTimeout(done, SPENT_MEMORY_MS);
            // In Node (24 has Web Locks) the marker must not keep the process alive.
            (timer as { unref?: () => void }).unref?.();
            releases.add(done);
          });
        });
      });
    },
    async isSpent(token) {
      if (ledger.has(fingerprint(token))) return true;
      const state = await locks.query();
      const wanted = marker(token);
      return (state.held ?? []).some((lock) => lock.name === wanted);
    },
    close() {
      for (const release of [...releases]) release();
    },
  };
}

type Message = { type: 'claim' | 'held' | 'released'; id: string } | { type: 'spent'; fp: string };

/** How long a claim waits for a competing claim, and the longest a holder is trusted to hold. */
const CLAIM_WINDOW_MS = 40;
const HOLD_TIMEOUT_MS = 10_000;

/**
 * A best-effort lock over a BroadcastChannel, for browsers without Web Locks: a page announces a
 * claim and waits a short window; among claims seen in that window the smallest id wins, and a
 * page that sees a holder waits for its release (or its time-out, should the page have closed).
 * Spent tokens are announced on the same channel.
 */
function broadcastRenewal(name: string): RenewalLock {
  const channel = new BroadcastChannel(name);
  const id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const ledger = localLedger();
  let holding = false;
  let busyUntil = 0;
  /** Claims of other pages and when they arrived: one that arrived just before ours still competes. */
  const rivals = new Map<string, number>();
  const waiters = new Set<() => void>();
  const post = (message: Message) => channel.postMessage(message);
  channel.onmessage = (event: MessageEvent<Message>) => {
    const msg = event.data;
    if (!msg) return;
    if (msg.type === 'spent') {
      ledger.add(msg.fp);
      return;
    }
    if (msg.id === id) return;
    if (msg.type === 'claim') {
      rivals.set(msg.id, Date.now());
      if (holding) post({ type: 'held', id });
    } else if (msg.type === 'held') {
      busyUntil = Date.now() + HOLD_TIMEOUT_MS;
    } else {
      busyUntil = 0;
      rivals.delete(msg.id);
      for (const wake of [...waiters]) wake();
    }
  };
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  const acquire = async () => {
    for (;;) {
      while (Date.now() < busyUntil) await pause(busyUntil - Date.now());
      post({ type: 'claim', id });
      await new Promise((r) => setTimeout(r, CLAIM_WINDOW_MS));
      const recent = Date.now() - 2 * CLAIM_WINDOW_MS;
      for (const [other, at] of rivals) if (at < recent) rivals.delete(other);
      const beaten = [...rivals.keys()].some((other) => other < id);
      if (!beaten && Date.now() >= busyUntil) {
        holding = true;
        // A page whose claim crossed ours in flight learns now that the lock is taken.
        post({ type: 'held', id });
        return;
      }
      if (beaten) busyUntil = Math.max(busyUntil, Date.now() + HOLD_TIMEOUT_MS);
    }
  };
  const inPage = pageMutex();
  return {
    mode: 'broadcast-channel',
    exclusive: <T>(task: () => Promise<T>) =>
      inPage(async () => {
        await acquire();
        try {
          return await task();
        } finally {
          holding = false;
          post({ type: 'released', id });
        }
      }),
    async markSpent(token) {
      const fp = fingerprint(token);
      ledger.add(fp);
      post({ type: 'spent', fp });
    },
    isSpent: async (token) => ledger.has(fingerprint(token)),
    close: () => channel.close(),
  };
}

/** One page (or process) alone. */
function pageRenewal(): RenewalLock {
  const ledger = localLedger();
  return {
    mode: 'page',
    exclusive: pageMutex(),
    async markSpent(token) {
      ledger.add(fingerprint(token));
    },
    isSpent: async (token) => ledger.has(fingerprint(token)),
    close: () => {},
  };
}

/**
 * The lock that serialises renewals of the grant stored under `key`: Web Locks where the browser has
 * them (every evergreen browser), a BroadcastChannel protocol in a browser without them, and a mutex
 * for this page alone elsewhere (Node, or `mode: 'page'`).
 */
export function renewalLock(key: string, mode?: LockMode): RenewalLock {
  const name = `identity-service:renewal:${key}`;
  const locks = webLocks();
  // Outside a browser (no window) there are no other pages to share with: Node's BroadcastChannel
  // reaches worker threads only, so the default there is this process alone.
  const browser = typeof window !== 'undefined' && typeof BroadcastChannel === 'function';
  const chosen: LockMode = mode ?? (locks ? 'web-locks' : browser ? 'broadcast-channel' : 'page');
  if (chosen === 'web-locks') {
    if (!locks) throw new Error('Web Locks are not available here');
    return webLockRenewal(name, locks);
  }
  return chosen === 'broadcast-channel' ? broadcastRenewal(name) : pageRenewal();
}
