import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Algorithm } from '@node-rs/argon2';
import { Problem } from '../problem.js';
import { costOf, nodeCryptoSampleLike, parseStoredHash, verifyWithNodeCrypto } from './imported-hashes.js';

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False for a wrong password and for a malformed hash; never throws for either. */
  verify(hash: string, password: string): Promise<boolean>;
  /** Verifies against a fixed dummy hash and returns false: equal-time refusal when there is no account. */
  burn(password: string): Promise<false>;
  /**
   * Throws 503 service.unavailable (with Retry-After) when a hash started now would wait longer
   * than the bound: routes call it before writing anything, so a shed request leaves no trace.
   * hash, verify and burn apply the same check themselves.
   */
  admit(): void;
  /**
   * Runs a password path (its reads and writes before the hash, and the hash) once one of the
   * door's places is free: at most the gate's limit plus DOOR_LOOKAHEAD paths at once, the rest
   * waiting in order before doing any work. Without it a burst of sign-ins did all their reads at
   * once only to queue at the gate, and the event loop ran them back to back (docs/performance.md,
   * "Health during sign-in load"). admit() counts those waiting here.
   */
  enter<T>(path: () => Promise<T>): Promise<T>;
  /** Operations running and waiting now (metrics). */
  stats(): { active: number; waiting: number };
  /**
   * True when a stored hash is not this service's own Argon2id: an imported one, replaced by
   * Argon2id at the first successful sign-in (docs/decisions.md, "Imported password hashes").
   */
  needsUpgrade(hash: string): boolean;
  /**
   * Measures the verification time of each hash profile the samples stand for (one sample per
   * imported scheme and cost, made of a random password), once per profile: the refusal floor
   * below is the slowest of them.
   */
  calibrate(samples: readonly string[]): Promise<void>;
  /**
   * Resolves when `startedAt` (performance.now() taken before the check) is at least the refusal
   * floor ago: once imported hashes exist, every refused password check lasts as long as the
   * slowest verifier measured, so a refusal's time tells neither an imported hash nor an absent
   * account (docs/decisions.md, "Imported password hashes", equal time). Without imported profiles
   * every check is one Argon2id verify and nothing is padded.
   */
  padRefusal(startedAt: number): Promise<void>;
  /** A hash with the same scheme and cost as `stored`, of a random password (calibration samples). */
  sampleLike(stored: string): Promise<string | undefined>;
}

/** A refusal lasts at least the slowest recent verification of any profile plus this share. */
const FLOOR_MARGIN = 1.5;
/** Verification times kept per profile for the floor. */
const RECENT = 16;
/**
 * The floor is rounded up to a multiple of this: the slowest recent time moves by a few
 * milliseconds as its window slides, and a floor that moved with it would let two kinds of refusal
 * measured at different moments differ by that much; rounded, it stays put between those moves.
 */
const FLOOR_QUANTUM_MS = 50;
/**
 * Password paths let through the door beyond the gate's limit: one reads while another hashes, so
 * the hashing threads never wait for a path's reads, and a burst's reads run a few at a time.
 */
const DOOR_LOOKAHEAD = 2;

// `Algorithm` is an ambient const enum, which isolated-module builds (tsx, vitest) cannot inline and
// the package's runtime object leaves empty; 2 is Argon2id in its declaration.
const ARGON2ID = 2 as Algorithm;

/**
 * At most `limit` operations run at once; the rest wait their turn in order. Hashing runs on its
 * own threads (below), but each Argon2id verification keeps a core busy: with as many hashes as cores, the
 * event loop, the database and everything else on the machine wait for a core (measured on the
 * 2-core CI machine: GET /health/live p99 24 ms with one hash at a time, 101 ms with two).
 */
class Semaphore {
  #active = 0;
  readonly #waiting: (() => void)[] = [];
  /** Moving average of one operation's duration, once one has finished. */
  #meanMs: number | undefined;
  constructor(
    private readonly limit: number,
    private readonly maxWaitMs: number,
    private readonly onWait: (ms: number) => void,
  ) {}

  stats(): { active: number; waiting: number } {
    return { active: this.#active, waiting: this.#waiting.length };
  }

  /**
   * Load shedding: the wait a newcomer would face, at the measured pace, against the bound;
   * `queuedElsewhere` are operations bound for this gate that wait before reaching it (the door).
   */
  admit(queuedElsewhere = 0): void {
    if (this.#meanMs === undefined || (this.#active < this.limit && queuedElsewhere === 0)) return;
    const expectedWaitMs = ((this.#waiting.length + queuedElsewhere + 1) / this.limit) * this.#meanMs;
    if (expectedWaitMs <= this.maxWaitMs) return;
    const retryAfter = String(Math.max(1, Math.ceil(this.maxWaitMs / 1000)));
    throw new Problem('service.unavailable', { headers: { 'retry-after': retryAfter } });
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    this.admit();
    const queued = performance.now();
    if (this.#active >= this.limit) await new Promise<void>((r) => this.#waiting.push(r));
    this.#active++;
    this.onWait(performance.now() - queued);
    const started = performance.now();
    try {
      return await task();
    } finally {
      const ms = performance.now() - started;
      this.#meanMs = this.#meanMs === undefined ? ms : 0.8 * this.#meanMs + 0.2 * ms;
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}

/**
 * The hashing threads: worker threads that run Argon2id synchronously, one operation each at a
 * time, at the lowest scheduling priority (nice 19, Linux; elsewhere the default). Three things
 * move off the event loop with them: the hash itself (as in the libuv pool before), the part of
 * each call the binding ran on the calling thread before handing the work over (about 1 ms per
 * 19 MiB operation, measured: it scales with the memory cost, 0.2 ms at 1 MiB and 2.2 ms at
 * 64 MiB), and the fight for a core: at nice 19 a hash yields to the event loop, the database
 * driver and the database at once whenever they wake (docs/performance.md, "Health during
 * sign-in load"). Shared by every hasher of the process with the same priority, grown to the
 * largest gate asked for; a thread holds the process open only while it works.
 */
export const DEFAULT_HASHING_NICE = 19;
// The worker is plain CommonJS evaluated from this string, so it runs the same under tsx, vitest
// and a build, without a loader of its own.
const HASHING_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const argon2 = require(workerData.argon2);
const bcrypt = require(workerData.bcrypt);
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  require('node:os').setPriority(tid, workerData.nice);
} catch {}
parentPort.on('message', (m) => {
  try {
    const value =
      m.op === 'hash' ? argon2.hashSync(m.password, m.options)
      : m.op === 'bcrypt' ? bcrypt.compareSync(m.password, m.hashed)
      : m.op === 'bcrypt-hash' ? bcrypt.hashSync(m.password, m.cost)
      : argon2.verifySync(m.hashed, m.password);
    parentPort.postMessage({ id: m.id, value });
  } catch (err) {
    parentPort.postMessage({ id: m.id, failed: String(err && err.message ? err.message : err) });
  }
});`;

type HashJob =
  | { op: 'hash'; password: string; options: object }
  | { op: 'verify'; hashed: string; password: string }
  | { op: 'bcrypt'; hashed: string; password: string }
  | { op: 'bcrypt-hash'; password: string; cost: number };

/** An operation the binding refused (a malformed hash, bad options), not a dead thread. */
class HashingRefused extends Error {}

class HashingThreads {
  constructor(readonly nice: number) {}
  readonly #idle: Worker[] = [];
  readonly #queue: { job: HashJob; resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
  #size = 0;
  #want = 0;
  #nextId = 0;
  readonly #argon2 = createRequire(import.meta.url).resolve('@node-rs/argon2');
  // bcryptjs is JavaScript: its async API would run on the event loop in slices, so imported
  // bcrypt hashes are verified here, synchronously, on a hashing thread at its low priority.
  readonly #bcrypt = createRequire(import.meta.url).resolve('bcryptjs');

  /** At least `n` threads (made as they are first needed). */
  grow(n: number): void {
    this.#want = Math.max(this.#want, n);
  }

  run(job: HashJob): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.#size < this.#want ? this.#spawn() : undefined);
      if (!worker) return;
      const task = this.#queue.shift()!;
      const id = this.#nextId++;
      const done = (settle: () => void) => {
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        worker.unref();
        this.#idle.push(worker);
        settle();
        this.#dispatch();
      };
      const onMessage = (m: { id: number; value?: unknown; failed?: string }) => {
        if (m.id !== id) return;
        done(() =>
          m.failed === undefined ? task.resolve(m.value) : task.reject(new HashingRefused(m.failed)),
        );
      };
      // A thread that died takes its operation with it (an error, not a refusal); the next
      // operation makes a new one.
      const onExit = (code: number) => {
        worker.off('message', onMessage);
        task.reject(new Error(`the hashing thread exited (${code})`));
        this.#dispatch();
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      worker.ref();
      worker.postMessage({ id, ...task.job });
    }
  }

  #spawn(): Worker {
    this.#size++;
    const worker = new Worker(HASHING_WORKER, {
      eval: true,
      workerData: { argon2: this.#argon2, bcrypt: this.#bcrypt, nice: this.nice },
    });
    // An error ends the thread: 'exit' follows, which rejects its operation (above) and takes the
    // thread out of the pool, idle or not.
    worker.on('error', () => {});
    worker.once('exit', () => {
      this.#size--;
      const at = this.#idle.indexOf(worker);
      if (at >= 0) this.#idle.splice(at, 1);
    });
    worker.unref();
    return worker;
  }
}

const pools = new Map<number, HashingThreads>();

/** Argon2id, t=2, p=1, memoryCost = memoryKiB (OWASP's floor is 19456). Work runs on the hashing threads. */
export function createPasswordHasher(opts: {
  memoryKiB: number;
  concurrency?: number;
  /** The longest wait a hash may face before it is refused (ARGON2_MAX_WAIT_MS). */
  maxWaitMs?: number;
  /** Told how long each operation waited for its turn, in milliseconds. */
  onWait?: (ms: number) => void;
  /** The hashing threads' nice value, 0 to 19 (ARGON2_NICE); 19, the lowest priority, unless told. */
  nice?: number;
  /** Salted SHA-256/512 imported hashes verify only when true (PASSWORD_WEAK_HASHES=on). */
  weakHashes?: boolean;
}): PasswordHasher {
  const limit = Math.max(1, opts.concurrency ?? 1);
  const nice = opts.nice ?? DEFAULT_HASHING_NICE;
  const threads = pools.get(nice) ?? new HashingThreads(nice);
  pools.set(nice, threads);
  threads.grow(limit);
  const gate = new Semaphore(limit, opts.maxWaitMs ?? Number.POSITIVE_INFINITY, opts.onWait ?? (() => {}));
  const door = new Semaphore(limit + DOOR_LOOKAHEAD, Number.POSITIVE_INFINITY, () => {});
  const options = {
    algorithm: ARGON2ID,
    timeCost: 2,
    parallelism: 1,
    memoryCost: opts.memoryKiB,
  };
  const hashOne = (password: string) => threads.run({ op: 'hash', password, options }) as Promise<string>;
  let dummy: Promise<string> | undefined;
  const dummyHash = (): Promise<string> => {
    // Made once, with the same parameters as real hashes so a refusal costs what a check costs.
    dummy ??= gate.run(() => hashOne('no account has this password'));
    return dummy;
  };
  // A malformed hash is a refusal; a shed request (503 from the gate) or a dead hashing thread is
  // not, so it propagates.
  // The last RECENT verification times of each profile: the floor is the slowest of them with a
  // margin, so a profile's own spread (a busy machine stretches CPU-bound work unevenly) stays
  // under it, and a slow spell raises it at once.
  const recent = new Map<string, number[]>();
  const calibrated = new Set<string>();
  const record = (profile: string, ms: number) => {
    const times = recent.get(profile) ?? [];
    times.push(ms);
    if (times.length > RECENT) times.shift();
    recent.set(profile, times);
  };
  const check = (hashed: string, password: string): Promise<boolean> =>
    gate.run(async () => {
      const parsed = parseStoredHash(hashed);
      const started = performance.now();
      try {
        if (!parsed) return (await threads.run({ op: 'verify', hashed, password })) === true;
        if (parsed.scheme === 'argon2id' || parsed.scheme === 'argon2i') {
          return (await threads.run({ op: 'verify', hashed, password })) === true;
        }
        if (parsed.scheme === 'bcrypt')
          return (await threads.run({ op: 'bcrypt', hashed, password })) === true;
        return await verifyWithNodeCrypto(hashed, password, opts.weakHashes ?? false);
      } catch (err) {
        if (err instanceof HashingRefused) return false;
        throw err;
      } finally {
        if (parsed) record(parsed.profile, performance.now() - started);
      }
    });
  return {
    hash: (password) => gate.run(() => hashOne(password)),
    verify: check,
    admit: () => gate.admit(door.stats().waiting),
    enter: (path) => door.run(path),
    stats: () => {
      const { active, waiting } = gate.stats();
      return { active, waiting: waiting + door.stats().waiting };
    },
    async burn(password) {
      await check(await dummyHash(), password);
      return false;
    },
    needsUpgrade: (hash) => parseStoredHash(hash)?.scheme !== 'argon2id',
    async calibrate(samples) {
      for (const sample of samples) {
        const parsed = parseStoredHash(sample);
        if (!parsed || calibrated.has(parsed.profile)) continue;
        // Twice: the first of a profile pays its warm-up (code paths, memory), the mean keeps both.
        for (let i = 0; i < 2; i++) await check(sample, 'calibration, no account has this password');
        calibrated.add(parsed.profile);
      }
      if (calibrated.size > 0) {
        // The service's own profile is measured too, so the floor covers an Argon2id account.
        const own = parseStoredHash(await dummyHash());
        if (own && !recent.has(own.profile)) await check(await dummyHash(), 'calibration');
      }
    },
    async padRefusal(startedAt) {
      if (calibrated.size === 0) return;
      let slowest = 0;
      for (const times of recent.values()) slowest = Math.max(slowest, ...times);
      const floor = Math.ceil((slowest * FLOOR_MARGIN) / FLOOR_QUANTUM_MS) * FLOOR_QUANTUM_MS;
      const left = startedAt + floor - performance.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    },
    async sampleLike(stored) {
      const password = randomBytes(18).toString('base64');
      const cost = costOf(stored);
      if (cost && 'cost' in cost) {
        return gate.run(
          () => threads.run({ op: 'bcrypt-hash', password, cost: cost.cost }) as Promise<string>,
        );
      }
      if (cost) {
        const algorithm = (cost.algorithm === 'argon2id' ? 2 : 1) as Algorithm;
        return gate.run(
          () =>
            threads.run({
              op: 'hash',
              password,
              options: { algorithm, memoryCost: cost.m, timeCost: cost.t, parallelism: cost.p },
            }) as Promise<string>,
        );
      }
      return nodeCryptoSampleLike(stored);
    },
  };
}
