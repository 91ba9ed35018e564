import { availableParallelism } from 'node:os';
import { integer, oneOf, section } from './schema.js';

export const ARGON2_PRODUCTION_FLOOR_KIB = 19456;

/** Password hashing: Argon2id's cost, and how much of it may run and wait at once. */
export const hashing = section({
  variables: {
    ARGON2_MEMORY_KIB: integer(ARGON2_PRODUCTION_FLOOR_KIB, 8, 1048576, {
      description: `Argon2id memory cost (t=2, p=1); production refuses less than ${ARGON2_PRODUCTION_FLOOR_KIB}`,
    }),
    // One core stays free for the event loop and the database driver.
    ARGON2_CONCURRENCY: integer(Math.max(1, availableParallelism() - 1), 1, 256, {
      description:
        'Argon2id hashes or verifications running at once; the rest wait in order (memory-hard hashing in parallel beyond the spare cores lowers total throughput and starves the event loop)',
      shown: 'cores − 1, at least 1',
    }),
    ARGON2_NICE: integer(19, 0, 19, {
      description:
        'scheduling priority (nice, Linux) of the threads that run Argon2id: at 19 a hash yields the core to the event loop and the database whenever they wake, so other requests stay responsive during sign-in load; lower it on a host where other busy processes would leave hashing too little CPU',
    }),
    ARGON2_MAX_WAIT_MS: integer(3000, 100, 600000, {
      description:
        'load shedding: a sign-in, sign-up or password route whose Argon2id work would wait longer than this (queue length at the measured pace) answers 503 `service.unavailable` with `Retry-After` at once, before writing anything',
    }),
    PASSWORD_WEAK_HASHES: oneOf('off', ['off', 'on'] as const, {
      description:
        'imported salted SHA-256/SHA-512 password hashes (one fast digest, no work factor): `on` lets an import bring them and a sign-in verify them, replacing each with Argon2id at its first success, and logs a warning at start; `off` refuses them at import and never verifies them (docs/import.md)',
    }),
  },
  map: (e) => ({
    /** Argon2id memory cost in KiB; OWASP floor 19 MiB. */
    argon2MemoryKiB: e.ARGON2_MEMORY_KIB,
    /** Argon2id operations allowed at once (the rest queue). */
    argon2Concurrency: e.ARGON2_CONCURRENCY,
    /** Nice value of the Argon2id threads (19: they yield to everything else). */
    argon2Nice: e.ARGON2_NICE,
    /** The longest expected wait in the Argon2id queue before a request is shed with 503. */
    argon2MaxWaitMs: e.ARGON2_MAX_WAIT_MS,
    /** Imported salted SHA hashes accepted and verified (PASSWORD_WEAK_HASHES=on). */
    weakHashes: e.PASSWORD_WEAK_HASHES === 'on',
  }),
});
