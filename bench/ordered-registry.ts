/**
 * The registries of the `podhook-ordered` and `podhook-unordered` targets: the project's handlers
 * plus one more, `syncPod`, ordered per pod (`data.pod.id` of the bench's payloads, at its
 * `created_at`) or not. The load client spreads the deliveries over 1,000 pods; side by side the
 * two measure what ordering costs (its rows with the claim, the key lock, the hold, the settling).
 * Written as JavaScript beside the build (dist/bench/…), since `npm start`'s node runs no TypeScript.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './harness.js';

export const ORDERED_REGISTRY = 'dist/bench/podhook-ordered/index.js';
export const UNORDERED_REGISTRY = 'dist/bench/podhook-unordered/index.js';
/** The pods the load is spread over. */
export const ORDERED_PODS = 1000;

export function writeOrderedRegistries(): void {
  for (const [dir, order] of [
    ['podhook-ordered', "order: { key: (e) => e.payload.data?.pod?.id, at: (e) => e.payload.created_at }, "],
    ['podhook-unordered', ''],
  ] as const) {
    mkdirSync(join(ROOT, 'dist/bench', dir), { recursive: true });
    writeFileSync(
      join(ROOT, 'dist/bench', dir, 'index.js'),
      `import { handlers as project } from '../../handlers/index.js';\n` +
        `import { defineHandler } from '../../src/index.js';\n` +
        `export const handlers = [...project, defineHandler('pod.*', { name: 'syncPod', ${order}}, async function syncPod() {})];\n`,
    );
  }
}
