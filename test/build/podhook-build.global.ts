import type { TestProject } from 'vitest/node';
import { buildPodhook, removeBuild, type PodhookBuild } from '../helpers/podhook-build.js';
import { runShared } from '../helpers/run-shared.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's build of podhook (test/helpers/podhook-build.ts), or null with PODHOOK_TEST_FROM_SOURCE=1. */
    podhookBuild: PodhookBuild | null;
  }
}

/**
 * Compiles podhook once for the run, from the sources as they are now; spawned `podhook`
 * processes start from it (test/helpers/spawn-podhook.ts). A rerun in watch mode compiles again,
 * so a spawned process never runs older code than the tests import. PODHOOK_TEST_FROM_SOURCE=1
 * skips it: every spawned process then runs bin/podhook.js through tsx, as before.
 */
export default async function setup(project: TestProject) {
  if (process.env.PODHOOK_TEST_FROM_SOURCE === '1') {
    project.provide('podhookBuild', null);
    return;
  }
  // One build for the run, whichever projects list this setup (test/helpers/run-shared.ts).
  const first = await runShared('podhook-build', async () => {
    const made = await buildPodhook();
    return { value: made, stop: () => removeBuild(made) };
  });
  let build: PodhookBuild = first.value;
  project.provide('podhookBuild', build);
  let rebuilt: PodhookBuild | undefined;
  project.onTestsRerun(async () => {
    const previous = rebuilt;
    rebuilt = build = await buildPodhook();
    project.provide('podhookBuild', build);
    if (previous) removeBuild(previous);
  });
  return async () => {
    if (rebuilt) removeBuild(rebuilt);
    await first.release();
  };
}
