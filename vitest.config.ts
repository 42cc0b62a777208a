import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-pool-workers';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ownModulesFiles, processTestFiles, quickTestFiles } from './test/quick-files.js';
import { ProcessesFirstSequencer } from './test/sequencer.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** The package's own name, as tsconfig.json's paths map it: handlers import from 'podhook'. */
export const podhookAliases = [
  { find: /^podhook$/, replacement: here('./src/index.ts') },
  { find: /^podhook\/testing$/, replacement: here('./src/testing/index.ts') },
];

/**
 * The Node project's files (test/ but test/worker/, and the team's handlers/**\/*.test.ts), and
 * those among them that mock modules, stub globals or fake timers (test/quick-files.ts).
 */
const nodeFiles = [...quickTestFiles(), ...processTestFiles()];
const ownModules = ownModulesFiles(nodeFiles);

/** The Node projects' shared set-up: one PostgreSQL server and one podhook build for the run, whichever project starts first. */
const nodeGlobalSetup = ['./test/postgres/postgres.global.ts', './test/build/podhook-build.global.ts'];

export default defineConfig({
  resolve: { alias: podhookAliases },
  test: {
    testTimeout: 20_000,
    // Log lines (the Worker's console logger among them) are shown for failing tests only.
    silent: 'passed-only',
    hookTimeout: 30_000,
    // Tests spawn real servers and SQLite files; two workers match this 2-core machine.
    maxWorkers: 2,
    // The files that spawn processes first, the longest first even in a fresh clone (test/sequencer.ts).
    sequence: { sequencer: ProcessesFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          // Files share their modules (vitest's isolate off): each module is imported once per
          // worker, not once per file, which was a fifth of the Node workers' time. Each file still
          // starts its own servers and stores; the few that mock modules, stub globals or fake
          // timers are in node-own below.
          include: nodeFiles.filter((f) => !ownModules.includes(f)),
          isolate: false,
          // Each file starts with the fixtures' recorded state empty.
          setupFiles: ['./test/helpers/file-setup.ts'],
          // One real PostgreSQL server for the run; each test file makes its own databases on it.
          // One build of the current sources for the run, which spawned `podhook` processes start from.
          globalSetup: nodeGlobalSetup,
        },
      },
      {
        extends: true,
        test: { name: 'node-own', include: ownModules, globalSetup: nodeGlobalSetup },
      },
      {
        // The Worker's tests run inside workerd (the Workers runtime), with wrangler.toml's
        // compatibility date, flags, vars and D1 binding, plus the test D1 databases. The files of
        // a vitest worker share one workerd and its databases (isolate off: a workerd per file
        // took 3-5 s to start, 57 s for the project, 21 s now); the tests write under ids of
        // their own and pass in any order (`--sequence.shuffle`).
        // The entry serves a fixture registry: podhook's tests never load handlers/.
        extends: true,
        plugins: [
          cloudflareTest(async () => ({
            main: './test/worker/fixture-entry.ts',
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              d1Databases: { DB: 'podhook', CONTRACT_DB: 'podhook-contract', STORE_DB: 'podhook-store' },
              bindings: {
                SVC_WEBHOOK_SECRET: 'whsec_test_3f9a1c0b7d2e4a58',
                // The same drizzle/sqlite/ migrations wrangler applies, for test/worker/apply-migrations.ts.
                TEST_MIGRATIONS: await readD1Migrations(here('./drizzle/sqlite')),
              },
            },
          })),
        ],
        test: {
          name: 'workerd',
          isolate: false,
          include: ['test/worker/**/*.test.ts'],
          setupFiles: ['./test/worker/apply-migrations.ts'],
          // A receiver on 127.0.0.1 (in Node) for the Worker's alerts.
          globalSetup: ['./test/worker/alert-receiver.global.ts'],
        },
      },
    ],
  },
});
