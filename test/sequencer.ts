// The order vitest starts the files of a project in. Its own sequencer runs the longest first when
// it knows their durations (node_modules/.vite/vitest, from an earlier run), else the largest
// files first: in a fresh clone (CI, a new contributor) the longest files, which are small ones
// driving a long scenario, would start last and run alone at the end while the other worker
// idles. This one starts the files that spawn processes (test/quick-files.ts) before those that
// do not, and, when no durations are known, the longest files first.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { processTestFiles } from './quick-files.js';

/**
 * The files that took longest in the runs measured for docs/testing.md (45 s and more): started
 * first when this clone has no durations of its own. An order only: a stale entry costs nothing.
 */
const LONGEST = ['test/node/backfill-node.test.ts', 'test/cli/listen-worker.test.ts', 'test/node/backfill-replicas-postgres.test.ts'];

export class ProcessesFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const processes = new Set(processTestFiles());
    const known = sorted.some((s) => this.ctx.cache.getFileTestResults(`${s.project.name}:${relative(root, s.moduleId)}`) !== undefined);
    const rank = (s: TestSpecification) => {
      const file = relative(root, s.moduleId);
      if (!known && LONGEST.includes(file)) return 0;
      return processes.has(file) ? 1 : 2;
    };
    // Stable: within a rank, vitest's own order (projects still one after another).
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => (a.spec.project.name === b.spec.project.name ? rank(a.spec) - rank(b.spec) : 0) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}
