import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-pool-workers';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 20_000,
    // Log lines (the Worker's console logger among them) are shown for failing tests only.
    silent: 'passed-only',
    hookTimeout: 30_000,
    // Tests spawn real servers and SQLite files; two workers match this 2-core machine.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/worker/**'],
          // One real PostgreSQL server for the run; each test file makes its own databases on it.
          globalSetup: ['./test/postgres/postgres.global.ts'],
        },
      },
      {
        // The Worker's tests run inside workerd (the Workers runtime), with wrangler.toml's
        // compatibility date, flags, vars and D1 binding, plus one D1 database per test file.
        extends: true,
        plugins: [
          cloudflareTest(async () => ({
            main: './src/worker/index.ts',
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              d1Databases: { DB: 'podhook', CONTRACT_DB: 'podhook-contract', STORE_DB: 'podhook-store' },
              bindings: {
                SVC_WEBHOOK_SECRET: 'whsec_test_3f9a1c0b7d2e4a58',
                // The same drizzle/ migrations wrangler applies, for test/worker/apply-migrations.ts.
                TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL('./drizzle', import.meta.url))),
              },
            },
          })),
        ],
        test: {
          name: 'workerd',
          include: ['test/worker/**/*.test.ts'],
          setupFiles: ['./test/worker/apply-migrations.ts'],
          // A receiver on 127.0.0.1 (in Node) for the Worker's alerts.
          globalSetup: ['./test/worker/alert-receiver.global.ts'],
        },
      },
    ],
  },
});
