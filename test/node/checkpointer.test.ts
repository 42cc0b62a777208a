import { readFileSync, statSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { startCheckpointer } from '../../src/store/sqlite/checkpointer.js';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();

/** A database whose own connection never checkpoints, and a writer of 4 KiB rows (one page each) in one transaction. */
function openWalOnly() {
  const path = dbIn(tempDir());
  const { sqlite, close } = openDatabase(path);
  sqlite.pragma('wal_autocheckpoint = 0');
  sqlite.exec('create table t (b blob)');
  const insert = sqlite.prepare('insert into t (b) values (?)');
  const write = (n: number) => sqlite.transaction(() => { for (let i = 0; i < n; i++) insert.run(Buffer.alloc(4096)); })();
  return { path, sqlite, write, close };
}

/**
 * Whether every frame in the WAL has been copied into the database: the wal-index header's
 * mxFrame equals the checkpoint's nBackfill (native byte order; https://www.sqlite.org/walformat.html).
 * Then the next commit rewinds the WAL.
 */
function walCopied(path: string): boolean {
  const shm = readFileSync(`${path}-shm`);
  return shm.readUInt32LE(16) === shm.readUInt32LE(96);
}

describe('checkpointer', () => {
  it('checkpoints from its own thread, so the WAL is rewound while auto-checkpoint is off', async () => {
    const { path, sqlite, write, close } = openWalOnly();
    write(2000); // about 8 MB of WAL, never checkpointed by this connection
    const walBefore = statSync(`${path}-wal`).size;
    expect(walBefore).toBeGreaterThan(8_000_000);

    expect(statSync(path).size).toBeLessThan(100_000); // the data is still only in the WAL

    const checkpointer = startCheckpointer({ path, intervalMs: 20 });
    await vi.waitFor(() => expect(statSync(path).size, 'pages copied into the database file').toBeGreaterThan(8_000_000), { timeout: 5000 });
    // Once a timed pass has copied these frames too, the next commit rewinds the WAL: it is reused, not grown.
    write(10);
    await vi.waitFor(() => expect(walCopied(path), 'every WAL frame copied').toBe(true), { timeout: 5000 });
    for (let i = 0; i < 50; i++) write(10); // 2 MB more data
    expect(statSync(`${path}-wal`).size).toBeLessThan(walBefore + 1_000_000);
    await checkpointer.stop();
    expect((sqlite.prepare('select count(*) c from t').get() as { c: number }).c).toBe(2510);
    close();
  });

  // Whether the writer hook keeps a WAL under steady commits bounded is a size reached in real
  // time: bench/wal-series.ts measures it, outside `npm test`.

  it('runs a pass when asked and resolves once it is done; once stopped, at once', async () => {
    const { path, write, close } = openWalOnly();
    write(500); // 2 MB only in the WAL
    const checkpointer = startCheckpointer({ path, intervalMs: 60_000 }); // no timed pass in this test
    expect(statSync(path).size).toBeLessThan(100_000);
    await checkpointer.passNow();
    expect(statSync(path).size).toBeGreaterThan(2_000_000);
    expect(checkpointer.framesBehind()).toBe(0);
    await checkpointer.stop();
    await checkpointer.passNow(); // the prune must never wait on a stopped checkpointer
    close();
  });

  it('reports how far it is behind the WAL (the prune waits on it)', async () => {
    const { path, write, close } = openWalOnly();
    // A reader holding an old snapshot stops the checkpoint part-way: frames stay behind.
    const reader = openDatabase(path, { migrate: false });
    reader.sqlite.exec('begin');
    reader.sqlite.prepare('select count(*) from t').get();
    write(500);
    const checkpointer = startCheckpointer({ path, intervalMs: 20 });
    await vi.waitFor(() => expect(checkpointer.framesBehind(), 'frames reported behind').toBeGreaterThan(400), { timeout: 5000 });
    reader.sqlite.exec('commit');
    await vi.waitFor(() => expect(checkpointer.framesBehind(), 'the checkpoint caught up').toBe(0), { timeout: 5000 });
    await checkpointer.stop();
    reader.close();
    close();
  });
});
