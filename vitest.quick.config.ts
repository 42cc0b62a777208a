// `npm run test:quick`: the inner loop for changes to the core. The Node tests that start no
// process (no podhook, PostgreSQL, Chromium, workerd, tsc or npm: test/quick-files.ts sorts them
// from their imports), so no global setup either. Files share their modules (vitest's isolate
// off: each module is imported once per worker, not once per file), except those that mock
// modules, stub globals or fake timers, which get their own. `npm test` runs these and all the
// others, each file with its own modules.
import { defineConfig } from 'vitest/config';
import { ownModulesFiles, quickTestFiles } from './test/quick-files.js';
import { podhookAliases } from './vitest.config.js';

const quick = quickTestFiles();
const own = ownModulesFiles(quick);

export default defineConfig({
  resolve: { alias: podhookAliases },
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    silent: 'passed-only',
    maxWorkers: 2,
    projects: [
      // Each file starts with the fixtures' recorded state empty (as in `npm test`'s node project).
      { extends: true, test: { name: 'quick', include: quick.filter((f) => !own.includes(f)), isolate: false, setupFiles: ['./test/helpers/file-setup.ts'] } },
      { extends: true, test: { name: 'quick-own-modules', include: own } },
    ],
  },
});
