import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { generatePayloadModule, type PayloadShapes } from '../../src/core/shapes/index.js';
import { esbuild } from './podhook-build.js';
import { REPO_ROOT, runBuild } from './spawn-podhook.js';

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
 *
 * With `compiled` (for a spawned `podhook serve`), and when the run made a build of podhook, the
 * folder is in the build instead, and its modules are compiled to JavaScript beside their
 * TypeScript, as the image's build compiles a team's handlers: the path returned is the index's
 * `.js`, which the process (and its handler threads) load from the build, where a `.ts` one
 * would have them run every module of podhook through tsx (seconds more to start each).
 */
export function useLearnedRegistries({ compiled = false }: { compiled?: boolean } = {}) {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  /** Writes `_payloads.ts` (generated from `shapes`) and `index.ts` (these handlers); returns the index's path. */
  return (shapes: PayloadShapes, handlers: readonly string[] = [WELCOME_HANDLER]): string => {
    const build = compiled ? runBuild() : null;
    const dir = mkdtempSync(join(build?.root ?? REPO_ROOT, '.learned-registry-'));
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
    if (!build) return join(dir, 'index.ts');
    for (const name of ['_payloads', 'index']) {
      const { code } = esbuild().transformSync(readFileSync(join(dir, `${name}.ts`), 'utf8'), { loader: 'ts', format: 'esm', target: `node${process.versions.node}` });
      writeFileSync(join(dir, `${name}.js`), code);
    }
    return join(dir, 'index.js');
  };
}
