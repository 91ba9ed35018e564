import { defineConfig } from 'vitest/config';

/**
 * Files whose subject is a property of the whole process, run each in a fresh one: the security
 * notices' scope test checks that promise hooks are off after a change, which any earlier OIDC
 * request in the same process turns on for good (oidc-provider's own AsyncLocalStorage).
 */
const OWN_PROCESS = ['test/security-notices/notices.test.ts'];
const EXCLUDE = ['test/races/**', 'test/timing/**', 'test/e2e/**', 'node_modules/**'];

export default defineConfig({
  test: {
    testTimeout: 30000,
    hookTimeout: 60000,
    pool: 'forks',
    fileParallelism: true,
    // Two files at a time. Vitest's default is one fewer than the cores, so one on a 2-core
    // machine, where most of a file's time is spent waiting (child processes, SMTP and HTTP sinks,
    // Argon2id on libuv's threads, the PostgreSQL server): measured with two, the PGlite pass took
    // 588 s while three other test runs shared the machine, against 535-690 s for one at a time on
    // a quiet one.
    maxWorkers: 2,
    // Files share their worker's modules (isolate: false): each of the two workers imports the
    // service once instead of every file importing it afresh (docs/decisions.md, "The test suite
    // without per-file isolation"). Measured on PGlite, 2026-11-28, the machine shared with other
    // test runs: the whole suite took 703 s of CPU isolated (715 s wall, load 10) and 393 s shared
    // (Vitest's summed import 264 s against 53 s); 29 files took 236 s isolated and 84 s shared.
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...EXCLUDE, ...OWN_PROCESS],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS, isolate: true } },
    ],
  },
});
