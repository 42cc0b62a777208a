import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/node/open-database.js';
import { openSqliteStore } from '../../src/node/sqlite-store.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { describeStoreContract, newDelivery } from './store-contract.js';
import { statSync } from 'node:fs';

const tempDir = useTempDir();

describeStoreContract('better-sqlite3', async () => {
  const { store, close } = openSqliteStore(dbIn(tempDir()));
  return { store, close };
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
    const first = openSqliteStore(path);
    const d = newDelivery();
    await first.store.claim([d]);
    first.close();
    const second = openSqliteStore(path);
    expect((await second.store.get(d.eventId))?.eventId).toBe(d.eventId);
    second.close();
  });
});
