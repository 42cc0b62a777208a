import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgresOptions } from '../helpers/embedded-postgres.js';
import { runShared } from '../helpers/run-shared.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** An admin URL on the one test PostgreSQL server; each test file makes its own databases there. */
    postgresAdminUrl: string;
  }
}

/**
 * The run's server holds only throwaway test databases, so it does not flush to disk. A server
 * process killed still leaves its writes in the OS's cache: what the tests check (commits, crashes
 * of podhook) is unchanged; only a crash of the machine would lose them.
 */
const THROWAWAY = { fsync: 'off', full_page_writes: 'off', synchronous_commit: 'off' };

/**
 * One real PostgreSQL server (binaries from npm) for the whole run, whichever projects list this
 * setup (test/helpers/run-shared.ts). When it cannot start, the
 * run stops on the helper's PostgresStartError: one line, printed without a stack, saying what
 * failed and what to do.
 */
export default function setup(project: TestProject) {
  return setupPostgres(project);
}

/** The setup with the helper's options (test/dev/exit-code.test.ts gives it binaries that are not there). */
export async function setupPostgres(project: TestProject, options: EmbeddedPostgresOptions = {}) {
  const { value: server, release } = await runShared('postgres', async () => {
    const server = await startEmbeddedPostgres({ settings: THROWAWAY, ...options });
    const { binariesMs, initdbMs, startMs } = server.timings;
    if (process.env.PODHOOK_PG_TIMING) {
      const from = server.binaries.copied ? `a copy in ${server.binaries.home}` : 'the package';
      console.log(`embedded-postgres: binaries from ${from} (${binariesMs} ms), initdb ${initdbMs} ms, start ${startMs} ms`);
    }
    return { value: server, stop: () => server.remove() };
  });
  project.provide('postgresAdminUrl', server.adminUrl);
  return release;
}
