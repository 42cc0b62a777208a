// `npm run test:handlers:worker`: the handler tests (handlers/**/*.test.ts) inside workerd, the
// Workers runtime, with wrangler.toml's compatibility date and flags: a handler that relies on
// a Node-only API fails here, before it is deployed to the Worker. Files named *.node.test.ts
// are Node-only tests (createTestReceiver needs better-sqlite3) and are left out.
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';
import type { Reporter } from 'vitest/node';
import { podhookAliases } from './vitest.config.js';

const RULE = `
podhook: a handler test failed in workerd (npm run test:handlers:worker).
Handlers run on Node and, when the Worker is deployed, in workerd: use Web APIs (fetch,
crypto.subtle, TextEncoder, AbortSignal) and the node:* modules workerd's nodejs_compat
provides (node:crypto, node:buffer, ...), not the file system, child processes, native
addons (better-sqlite3) or process-wide state. If this handler is never deployed to the
Worker, keep its test Node-only by naming it *.node.test.ts. See docs/handlers.md,
"One handler set, two runtimes".
`;

/** Prints the rule once at the end of a run with a failure (a failed test or a file that did not load). */
const ruleReporter: Reporter = {
  onTestRunEnd(_modules, _errors, reason) {
    if (reason === 'failed') process.stderr.write(RULE);
  },
};

export default defineConfig({
  resolve: { alias: podhookAliases },
  plugins: [cloudflareTest({ wrangler: { configPath: './wrangler.toml' } })],
  test: {
    name: 'handlers-workerd',
    include: ['handlers/**/*.test.ts'],
    exclude: ['handlers/**/*.node.test.ts'],
    passWithNoTests: true,
    reporters: ['default', ruleReporter],
    testTimeout: 20_000,
  },
});
