import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/races/**', 'test/timing/**', 'test/e2e/**', 'node_modules/**'],
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
  },
});
