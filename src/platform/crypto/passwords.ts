import { type Algorithm, hash, verify } from '@node-rs/argon2';

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False for a wrong password and for a malformed hash; never throws for either. */
  verify(hash: string, password: string): Promise<boolean>;
  /** Verifies against a fixed dummy hash and returns false: equal-time refusal when there is no account. */
  burn(password: string): Promise<false>;
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
  constructor(private readonly limit: number) {}
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.limit) await new Promise<void>((r) => this.#waiting.push(r));
    this.#active++;
    try {
      return await task();
    } finally {
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}

/** Argon2id, t=2, p=1, memoryCost = memoryKiB (OWASP's floor is 19456). Work runs in the libuv pool. */
export function createPasswordHasher(opts: { memoryKiB: number; concurrency?: number }): PasswordHasher {
  const gate = new Semaphore(Math.max(1, opts.concurrency ?? 1));
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
  const check = async (hashed: string, password: string): Promise<boolean> => {
    try {
      return await gate.run(() => verify(hashed, password));
    } catch {
      return false;
    }
  };
  return {
    hash: (password) => gate.run(() => hash(password, options)),
    verify: check,
    async burn(password) {
      await check(await dummyHash(), password);
      return false;
    },
  };
}
