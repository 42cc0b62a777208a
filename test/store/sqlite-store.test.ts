import { describe, expect, it } from 'vitest';
import { createDrizzleStore, createSyncClaimExecutor } from '../../src/store/drizzle-store.js';
import { openDatabase } from '../../src/node/open-database.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { describeStoreContract, newDelivery } from './store-contract.js';
import { statSync } from 'node:fs';

const tempDir = useTempDir();

describeStoreContract('better-sqlite3', async () => {
  const database = openDatabase(dbIn(tempDir()));
  return { store: createDrizzleStore(database.db, { claim: createSyncClaimExecutor(database.db) }), close: () => database.close() };
});

describe('better-sqlite3 database file', () => {
  it('is durable (WAL, synchronous=FULL) and readable by its owner only', () => {
    const path = dbIn(tempDir());
    const database = openDatabase(path);
    expect(database.sqlite.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(database.sqlite.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(statSync(path).mode & 0o777).toBe(0o600);
    database.close();
  });

  it('keeps what was claimed across a reopen', async () => {
    const path = dbIn(tempDir());
    const first = openDatabase(path);
    const d = newDelivery();
    await createDrizzleStore(first.db, { claim: createSyncClaimExecutor(first.db) }).claim([d]);
    first.close();
    const second = openDatabase(path);
    const row = await createDrizzleStore(second.db, { claim: createSyncClaimExecutor(second.db) }).get(d.eventId);
    expect(row?.eventId).toBe(d.eventId);
    second.close();
  });
});
