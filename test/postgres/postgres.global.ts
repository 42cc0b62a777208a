import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgresOptions } from '../helpers/embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** An admin URL on the one test PostgreSQL server; each test file makes its own databases there. */
    postgresAdminUrl: string;
  }
}

/**
 * One real PostgreSQL server (binaries from npm) for the whole run. When it cannot start, the
 * run stops on the helper's PostgresStartError: one line, printed without a stack, saying what
 * failed and what to do.
 */
export default function setup(project: TestProject) {
  return setupPostgres(project);
}

/** The setup with the helper's options (test/dev/exit-code.test.ts gives it binaries that are not there). */
export async function setupPostgres(project: TestProject, options: EmbeddedPostgresOptions = {}) {
  const server = await startEmbeddedPostgres(options);
  const { binariesMs, initdbMs, startMs } = server.timings;
  if (process.env.PODHOOK_PG_TIMING) {
    const from = server.binaries.copied ? `a copy in ${server.binaries.home}` : 'the package';
    console.log(`embedded-postgres: binaries from ${from} (${binariesMs} ms), initdb ${initdbMs} ms, start ${startMs} ms`);
  }
  project.provide('postgresAdminUrl', server.adminUrl);
  return () => server.remove();
}
