import type { D1Migration } from 'cloudflare:test';
import type { WorkerEnv } from '../../src/worker/worker-env.js';

// The bindings vitest.config.ts gives the workerd tests: wrangler.toml's, plus one D1 database
// per test file and the migrations to apply to them.
declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      CONTRACT_DB: D1Database;
      STORE_DB: D1Database;
      TEST_MIGRATIONS: D1Migration[];
    }
    interface GlobalProps {
      mainModule: typeof import('../../src/worker/index.js');
    }
  }
}
