import { defineConfig } from 'vitest/config';

// `npm run test:e2e`: the browser suite (test/e2e), Chromium with a virtual authenticator, one file
// at a time. Needs /usr/bin/chromium (Debian's package; .ci/run installs it when missing).
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    testTimeout: 120000,
    hookTimeout: 60000,
    fileParallelism: false,
  },
});
