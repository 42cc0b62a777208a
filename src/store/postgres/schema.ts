import { bigint, customType, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { defineTables, type DialectKit } from '../tables.js';

/** Raw bytes as `bytea`: node-postgres returns a Buffer, handed on as a plain Uint8Array like the SQLite store's. */
const bytes = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  toDriver: (value) => (Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)),
  fromDriver: (value) => new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
});

/**
 * PostgreSQL's builders for ../tables.ts. Its types are SQLite's (see `DialectKit`): the tables come
 * out typed as the SQLite ones, which is how the shared store methods see them (`Tables`); the
 * PostgreSQL backend's own statements are SQL text (hot-statements.ts).
 */
const kit = {
  table: pgTable,
  text,
  int: integer,
  // Epoch milliseconds are past 2^31: int8, read as a JS number (every time podhook stores fits in 2^53).
  int64: (name: string) => bigint(name, { mode: 'number' }),
  bytes,
  index,
  uniqueIndex,
  primaryKey,
} as unknown as DialectKit;

/** podhook's tables in PostgreSQL (../tables.ts defines them). */
export const { deliveries, handlerRuns, handlerAttempts, orderedRuns, orderKeys, webhookSecrets, heartbeats, listenCursors, handlerRegistrations, backfills, rateTokens, apiKeys, handlerSteps, eventWaits } = defineTables(kit);
