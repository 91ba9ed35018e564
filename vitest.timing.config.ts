import { defineConfig } from 'vitest/config';

/**
 * The equal-time suite (issue 11 item 6): one file at a time, after the main suite, so no other
 * test competes for the CPU while answers are timed.
 */
export default defineConfig({
  test: {
    include: ['test/timing/**/*.test.ts'],
    testTimeout: 240000,
    hookTimeout: 60000,
    pool: 'forks',
    fileParallelism: false,
  },
});
