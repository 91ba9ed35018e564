import { defineConfig } from 'vitest/config';

// `npm run test:races`: the concurrency suite (test/races), always on the PostgreSQL server.
// One file at a time: each file opens one app with a pool of 10 connections, and other suites may
// share the server (max_connections 100). Rounds make single tests long, hence the timeouts.
export default defineConfig({
  test: {
    include: ['test/races/**/*.test.ts'],
    testTimeout: 240000,
    hookTimeout: 60000,
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
  },
});
