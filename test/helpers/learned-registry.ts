import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { generatePayloadModule, type PayloadShapes } from '../../src/core/shapes/index.js';
import { REPO_ROOT } from './spawn-podhook.js';

/** A pod.created handler that reads the learned fields (and logs no value from the body). */
export const WELCOME_HANDLER = `defineHandler('pod.created', async function welcome(event, { log }) {
  const id: string = event.payload.pod.id;
  log.info({ id_length: id.length }, 'welcomed');
})`;

/**
 * Registries that export a module `podhook schemas` generated, as a team's handlers/index.ts does,
 * each written at test time into a folder beside the sources (so 'podhook' and zod resolve as in
 * a checkout) and removed after the test. Never in the project's program: its `declare module`
 * would type every pod.created payload of podhook's own tests.
 */
export function useLearnedRegistries() {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  /** Writes `_payloads.ts` (generated from `shapes`) and `index.ts` (these handlers); returns the index's path. */
  return (shapes: PayloadShapes, handlers: readonly string[] = [WELCOME_HANDLER]): string => {
    const dir = mkdtempSync(join(REPO_ROOT, '.learned-registry-'));
    dirs.push(dir);
    writeFileSync(join(dir, '_payloads.ts'), generatePayloadModule(shapes));
    writeFileSync(
      join(dir, 'index.ts'),
      `import { defineHandler } from 'podhook';

export const handlers = [
  ${handlers.join(',\n  ')},
];

export { payloadSchemas, PAYLOAD_SHAPES as payloadShapes, payloadFields } from './_payloads.js';
`,
    );
    return join(dir, 'index.ts');
  };
}
