import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import { createSqliteStore, openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';
import { describeStoreContract, newDelivery } from './store-contract.js';
import { statSync } from 'node:fs';

const tempDir = useTempDir();

describeStoreContract('better-sqlite3', async () => {
  const { store, close } = openSqliteStore(dbIn(tempDir()));
  return { store, close };
});

describe('better-sqlite3 group commit', () => {
  it('shares one transaction among the writes waiting at a flush: a failing write rejects alone, the others commit', async () => {
    const database = openDatabase(dbIn(tempDir()));
    const store = createSqliteStore(database, { schedule: setImmediate });
    const good = [newDelivery(), newDelivery()];
    const bad = { ...newDelivery(), eventType: null as unknown as string }; // NOT NULL violation
    const results = await Promise.allSettled([store.claim([good[0]!]), store.claim([bad]), store.claim([good[1]!])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await store.get(good[0]!.eventId))?.eventId).toBe(good[0]!.eventId);
    expect((await store.get(good[1]!.eventId))?.eventId).toBe(good[1]!.eventId);
    expect(await store.get(bad.eventId)).toBeNull();
    database.close();
  });
});

describe('better-sqlite3 durable hook', () => {
  afterEach(() => void vi.useRealTimers());

  it('answers a claim only after the batch is made durable, and not at all if that fails', async () => {
    // Under fake timers, once every timer has run the store has had every chance to answer early.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval'] });
    const database = openDatabase(dbIn(tempDir()));
    let release!: () => void;
    let syncs = 0;
    let failNext = false;
    const store = createSqliteStore(database, {
      schedule: (flush) => setImmediate(flush), // whichever setImmediate is current: fake, then real
      durable: () => {
        syncs++;
        if (failNext) return Promise.reject(new Error('EIO'));
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    const d = newDelivery();
    let answered = false;
    const claim = store.claim([d]).then((r) => ((answered = true), r));
    await vi.runAllTimersAsync(); // the flush, and any timer an early answer could wait on
    expect(syncs).toBe(1);
    expect(answered).toBe(false); // committed, not yet synced: no answer
    vi.useRealTimers();
    release();
    expect(await claim).toEqual([{ outcome: 'new' }]);

    failNext = true;
    await expect(store.claim([newDelivery()])).rejects.toThrow('EIO');
    database.close();
  });

  it('commits a lease or a dispatch outcome without waiting for a sync (a crash may lose them)', async () => {
    const database = openDatabase(dbIn(tempDir()));
    let syncs = 0;
    const store = createSqliteStore(database, {
      schedule: setImmediate,
      durable: () => {
        syncs++;
        return Promise.resolve();
      },
    });
    const d = newDelivery();
    await store.claim([d]);
    expect(syncs).toBe(1);
    const [leased] = await store.leaseDue({ owner: 'w1', now: Date.now(), leaseMs: 60_000, limit: 10 });
    expect(leased?.eventId).toBe(d.eventId);
    await store.completeDispatch([{ eventId: d.eventId, owner: 'w1', status: 'processed', attempts: 1, lastError: null, nextAttemptAt: null, runs: [], now: Date.now() }]);
    expect((await store.get(d.eventId))?.status).toBe('processed');
    expect(syncs).toBe(1);
    database.close();
  });
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
