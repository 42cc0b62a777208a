import type { TestProject } from 'vitest/node';
import { buildPodhook, removeBuild, type PodhookBuild } from '../helpers/podhook-build.js';

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
  let build: PodhookBuild = await buildPodhook();
  project.provide('podhookBuild', build);
  project.onTestsRerun(async () => {
    const previous = build;
    build = await buildPodhook();
    project.provide('podhookBuild', build);
    removeBuild(previous);
  });
  return () => removeBuild(build);
}
