/**
 * The WAL-size check moved out of `npm test` (it compares sizes reached in real time, which a
 * loaded machine blurs): does the checkpointer's writer hook keep a WAL under steady commits
 * bounded, where without it SQLite never finds the WAL fully copied and never rewinds it?
 *
 * Run: `node --import tsx bench/wal-series.ts` (about 4 s). Prints both sizes and the ratio;
 * exits 1 when the bounded WAL is not below the unbounded one divided by `--ratio` (default 2.5).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCheckpointer } from '../src/store/sqlite/checkpointer.js';
import { openDatabase } from '../src/store/sqlite/open-database.js';

const ratio = Number(process.argv.find((a) => a.startsWith('--ratio='))?.slice('--ratio='.length) ?? 2.5);
const durationMs = 1600;

/** Commits one 4 KiB row every millisecond for `durationMs`; resolves with the WAL's largest size meanwhile. */
async function steadyWrites(withWriter: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'podhook-wal-'));
  const path = join(dir, 'podhook.db');
  const { sqlite, close } = openDatabase(path);
  try {
    sqlite.pragma('wal_autocheckpoint = 0'); // only the checkpointer checkpoints
    sqlite.exec('create table t (b blob)');
    const insert = sqlite.prepare('insert into t (b) values (?)');
    const checkpointer = startCheckpointer({ path, writer: withWriter ? sqlite : undefined, rewindAtFrames: 200 });
    let largest = 0;
    const timer = setInterval(() => {
      insert.run(Buffer.alloc(4096));
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }, 1);
    await new Promise((r) => setTimeout(r, durationMs));
    clearInterval(timer);
    await checkpointer.stop();
    return largest;
  } finally {
    close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const unbounded = await steadyWrites(false);
const bounded = await steadyWrites(true);
const seen = unbounded / bounded;
console.log(`WAL under steady commits for ${durationMs} ms: ${mb(unbounded)} MB without the writer hook, ${mb(bounded)} MB with it (${seen.toFixed(1)}x, want > ${ratio}x)`);
if (!(seen > ratio)) {
  console.error('the writer hook did not keep the WAL bounded');
  process.exitCode = 1;
}
