import { defineConfig } from 'vitest/config';

// Long fuzz runs: `npm run fuzz` (FUZZ_RUNS=2000 per route and per property). The same files run
// in `npm test` with a small FUZZ_RUNS default. FUZZ_SEED=<seed> replays a reported failure;
// FUZZ_VERBOSE=1 prints the statuses seen per route.
export default defineConfig({
  test: {
    include: ['test/fuzz/**/*.test.ts'],
    // The per-test timeout grows with FUZZ_RUNS (test/fuzz/support.ts); this only bounds hooks.
    testTimeout: 0,
    hookTimeout: 120000,
    pool: 'forks',
    fileParallelism: true,
  },
});
