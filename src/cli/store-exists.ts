import type { Config } from '../core/config.js';
import { nodeStoreBackend } from '../store/node-store.js';

/**
 * Whether the configured store is there to read: a PostgreSQL server (DATABASE_URL) always is,
 * a SQLite file only once the server or `podhook register` has created it. A command that only
 * reads checks this first, so it never creates an empty database at a mistyped path.
 */
export function storeExists(config: Pick<Config, 'databaseUrl' | 'databasePath'>): boolean {
  return nodeStoreBackend(config).exists();
}
