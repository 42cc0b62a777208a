import { customType, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { defineTables } from '../tables.js';

/**
 * Raw bytes as a BLOB. better-sqlite3 returns a Buffer, D1 an array of numbers: both come back
 * as a plain Uint8Array so the core sees one type.
 */
const bytes = customType<{ data: Uint8Array; driverData: Uint8Array | ArrayBuffer | number[] }>({
  dataType: () => 'blob',
  toDriver: (value) => value,
  fromDriver: (value) => {
    if (value instanceof Uint8Array) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    if (value instanceof ArrayBuffer) return new Uint8Array(value);
    return Uint8Array.from(value);
  },
});

/** podhook's tables in the SQLite dialect (better-sqlite3 and D1): ../tables.ts defines them. Times are epoch milliseconds. */
export const { deliveries, handlerRuns, handlerAttempts, orderedRuns, orderKeys, webhookSecrets, heartbeats, listenCursors, handlerRegistrations, backfills, rateTokens, apiKeys, handlerSteps, eventWaits } = defineTables({
  table: sqliteTable,
  text,
  int: integer,
  int64: integer,
  bytes,
  index,
  uniqueIndex,
  primaryKey,
});
