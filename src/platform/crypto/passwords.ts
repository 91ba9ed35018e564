import { type Algorithm, hash, verify } from '@node-rs/argon2';
import { Problem } from '../problem.js';

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
  /** Operations running and waiting now (metrics). */
  stats(): { active: number; waiting: number };
}

// `Algorithm` is an ambient const enum, which isolated-module builds (tsx, vitest) cannot inline and
// the package's runtime object leaves empty; 2 is Argon2id in its declaration.
const ARGON2ID = 2 as Algorithm;

/**
 * At most `limit` operations run at once; the rest wait their turn in order. Hashing runs in the
 * libuv pool, but each Argon2id verification keeps a core busy: with as many hashes as cores, the
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

  /** Load shedding: the wait a newcomer would face, at the measured pace, against the bound. */
  admit(): void {
    if (this.#meanMs === undefined || this.#active < this.limit) return;
    const expectedWaitMs = ((this.#waiting.length + 1) / this.limit) * this.#meanMs;
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

/** Argon2id, t=2, p=1, memoryCost = memoryKiB (OWASP's floor is 19456). Work runs in the libuv pool. */
export function createPasswordHasher(opts: {
  memoryKiB: number;
  concurrency?: number;
  /** The longest wait a hash may face before it is refused (ARGON2_MAX_WAIT_MS). */
  maxWaitMs?: number;
  /** Told how long each operation waited for its turn, in milliseconds. */
  onWait?: (ms: number) => void;
}): PasswordHasher {
  const gate = new Semaphore(
    Math.max(1, opts.concurrency ?? 1),
    opts.maxWaitMs ?? Number.POSITIVE_INFINITY,
    opts.onWait ?? (() => {}),
  );
  const options = {
    algorithm: ARGON2ID,
    timeCost: 2,
    parallelism: 1,
    memoryCost: opts.memoryKiB,
  };
  let dummy: Promise<string> | undefined;
  const dummyHash = (): Promise<string> => {
    // Made once, with the same parameters as real hashes so a refusal costs what a check costs.
    dummy ??= gate.run(() => hash('no account has this password', options));
    return dummy;
  };
  // A malformed hash is a refusal; a shed request (503 from the gate) is not, so it propagates.
  const check = (hashed: string, password: string): Promise<boolean> =>
    gate.run(async () => {
      try {
        return await verify(hashed, password);
      } catch {
        return false;
      }
    });
  return {
    hash: (password) => gate.run(() => hash(password, options)),
    verify: check,
    admit: () => gate.admit(),
    stats: () => gate.stats(),
    async burn(password) {
      await check(await dummyHash(), password);
      return false;
    },
  };
}
