import type { DeliveryStore } from '../core/delivery-store.js';
import type { CheckpointProgress } from '../core/dispatch/retention.js';
import type { Logger } from '../core/observability/logger.js';
import type { OpenedDatabase } from './sqlite/open-database.js';

/** What the Node server asks of its store, whichever backend it is (SQLite or PostgreSQL). */
export interface ServerStoreOptions {
  logger: Logger;
  /** SQLite: how long a commit waits for another process's write lock before ingest answers 503. */
  busyTimeoutMs?: number;
  /** Called when new work no dispatcher holds is committed, by this replica or another (PostgreSQL's LISTEN). */
  onWork?: () => void;
}

/**
 * The Node server's store and what the server needs around it: readiness, health, background
 * work and shutdown. One per backend (sqlite/sqlite-server-store.ts, postgres/postgres-server-store.ts),
 * chosen in one place (node-store.ts): the server never asks which one it has.
 */
export interface ServerStore {
  /** Writes are group-committed; every method rejects with a 503 error while the store cannot be reached. */
  store: DeliveryStore;
  /** Resolves once the store is reached (at once on SQLite; on PostgreSQL once reached and migrated). Never rejects. */
  ready: Promise<void>;
  /** Throws a 503 error when a delivery cannot be stored now (a flag: no I/O on the ingest path). */
  assertUsable(): void;
  /** `/readyz`'s store check beyond a ping: `ok`, or why the store cannot take deliveries. */
  health(): 'ok' | string;
  /**
   * Whether the stored signing secrets may have changed since the last call (cheap, exact); absent
   * when the backend cannot tell, and the secrets are then re-read once a second.
   */
  secretsMaybeChanged?: () => boolean;
  /** What prune pacing waits on: a checkpointer running beside the writer, once started. */
  checkpointProgress(): CheckpointProgress | undefined;
  /** Starts background work (checkpoints, watching the files). */
  start(): void;
  /** Stops background work and closes the database. */
  close(): Promise<void>;
  /** The better-sqlite3 database when the backend is SQLite (tests look inside it). */
  readonly database?: OpenedDatabase;
}
