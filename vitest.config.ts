import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Tests spawn real servers and SQLite files; two workers match this 2-core machine.
    maxWorkers: 2,
  },
});
