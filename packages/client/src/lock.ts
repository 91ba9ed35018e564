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

/** What the BroadcastChannel protocol needs of a channel (a test may slow one down). */
export interface ChannelLike {
  postMessage(message: unknown): void;
  onmessage: ((event: { data: unknown }) => void) | null;
  close(): void;
}

type Message =
  | { type: 'hello' | 'here' | 'bye' | 'ping'; id: string; clock: number }
  | { type: 'request'; id: string; clock: number }
  | { type: 'reply'; id: string; to: string; request: number; clock: number }
  | { type: 'spent'; fp: string };

/** How long a new page listens for the pages already there before its first request. */
const DISCOVERY_MS = 50;
/** A page that answers nothing, not even a ping, for this long is taken to be gone. */
const PEER_SILENCE_MS = 10_000;
/** How often a waiting page pings the pages it waits for. */
const PING_EVERY_MS = 1_000;

/**
 * A lock over a BroadcastChannel, for browsers without Web Locks: Ricart and Agrawala's mutual
 * exclusion. A page asks every page it knows with a Lamport timestamp and holds the lock once each
 * has answered; a page that holds the lock, or asks with an earlier timestamp (the id breaks a
 * tie), answers only when it releases. Safety does not depend on how fast messages travel, which
 * a claim-and-wait-a-window protocol did (it let two pages hold at once when a loaded machine
 * delayed a message past the window). Pages find each other by `hello` / `here` when they open and
 * say `bye` when they close or are hidden; a page silent for PEER_SILENCE_MS (crashed) stops being
 * waited for. Spent tokens are announced on the same channel, before the answer that lets the
 * next page in, so its ledger has them when it enters.
 */
export function broadcastRenewal(
  name: string,
  open: (name: string) => ChannelLike = (n) => new BroadcastChannel(n) as unknown as ChannelLike,
): RenewalLock {
  const channel = open(name);
  const id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const ledger = localLedger();
  const peers = new Set<string>();
  const lastHeard = new Map<string, number>();
  /** Pages whose request this page answers when it releases, with their request's timestamp. */
  const deferred = new Map<string, number>();
  let clock = 0;
  let holding = false;
  let asking:
    | { clock: number; waitingFor: Set<string>; answeredBy: Set<string>; granted: () => void }
    | undefined;
  const post = (message: Message) => channel.postMessage(message);
  const tick = (seen = 0) => {
    clock = Math.max(clock, seen) + 1;
    return clock;
  };
  const answered = (peer: string) => {
    if (!asking?.waitingFor.delete(peer)) return;
    asking.answeredBy.add(peer);
    if (asking.waitingFor.size === 0) asking.granted();
  };
  const forget = (peer: string) => {
    peers.delete(peer);
    lastHeard.delete(peer);
    deferred.delete(peer);
    answered(peer);
  };
  const first = (a: { clock: number; id: string }, b: { clock: number; id: string }) =>
    a.clock < b.clock || (a.clock === b.clock && a.id < b.id);
  channel.onmessage = (event) => {
    const msg = event.data as Message | undefined;
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'spent') {
      ledger.add(msg.fp);
      return;
    }
    if (msg.id === id) return;
    tick(msg.clock);
    if (msg.type === 'bye') {
      forget(msg.id);
      return;
    }
    peers.add(msg.id);
    lastHeard.set(msg.id, Date.now());
    if (msg.type === 'hello' || msg.type === 'ping') post({ type: 'here', id, clock: tick() });
    else if (msg.type === 'request') {
      if (holding || (asking && first({ clock: asking.clock, id }, msg))) deferred.set(msg.id, msg.clock);
      else {
        post({ type: 'reply', id, to: msg.id, request: msg.clock, clock: tick() });
        // A page this request did not wait for (it opened after, or its hello is still on the way)
        // asks first: it goes first, and this page must now hear it leave. It may never have seen
        // this page's request, so the request is sent again (a page that answered it already is
        // not waited for twice).
        if (asking && !asking.waitingFor.has(msg.id) && !asking.answeredBy.has(msg.id)) {
          asking.waitingFor.add(msg.id);
          post({ type: 'request', id, clock: asking.clock });
        }
      }
    } else if (msg.type === 'reply' && msg.to === id && msg.request === asking?.clock) answered(msg.id);
  };
  const hello = () => post({ type: 'hello', id, clock: tick() });
  const bye = () => post({ type: 'bye', id, clock: tick() });
  const win = (
    globalThis as { window?: Partial<Pick<EventTarget, 'addEventListener' | 'removeEventListener'>> }
  ).window;
  const onHide = () => bye();
  const onShow = (event: Event) => {
    if ((event as { persisted?: boolean }).persisted) hello();
  };
  win?.addEventListener?.('pagehide', onHide);
  win?.addEventListener?.('pageshow', onShow);
  hello();
  const discovered = new Promise<void>((resolve) => setTimeout(resolve, DISCOVERY_MS));
  const acquire = async () => {
    await discovered;
    const started = Date.now();
    const waitingFor = new Set(peers);
    let granted!: () => void;
    const entered = new Promise<void>((resolve) => {
      granted = resolve;
    });
    asking = { clock: tick(), waitingFor, answeredBy: new Set(), granted };
    post({ type: 'request', id, clock: asking.clock });
    if (waitingFor.size === 0) granted();
    const watch = setInterval(() => {
      const now = Date.now();
      for (const peer of [...waitingFor])
        if (now - Math.max(started, lastHeard.get(peer) ?? 0) > PEER_SILENCE_MS) forget(peer);
      if (waitingFor.size > 0) post({ type: 'ping', id, clock: tick() });
    }, PING_EVERY_MS);
    try {
      await entered;
    } finally {
      clearInterval(watch);
    }
    holding = true;
  };
  const release = () => {
    holding = false;
    asking = undefined;
    for (const [peer, request] of deferred) post({ type: 'reply', id, to: peer, request, clock: tick() });
    deferred.clear();
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
          release();
        }
      }),
    async markSpent(token) {
      const fp = fingerprint(token);
      ledger.add(fp);
      post({ type: 'spent', fp });
    },
    isSpent: async (token) => ledger.has(fingerprint(token)),
    close() {
      win?.removeEventListener?.('pagehide', onHide);
      win?.removeEventListener?.('pageshow', onShow);
      release();
      bye();
      channel.onmessage = null;
      channel.close();
    },
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
