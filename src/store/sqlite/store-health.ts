import { closeSync, fstat, fstatSync, openSync, stat, type Stats } from 'node:fs';
import { UnavailableError } from '../../core/errors.js';
import type { Logger } from '../../core/observability/logger.js';

export interface StoreHealthOptions {
  /** The SQLite file (its `-wal` is watched too). */
  path: string;
  logger: Logger;
  /** How often the files are checked with no commit to check them (default 1000 ms). */
  intervalMs?: number;
}

export interface StoreHealth {
  /** Throws a 503 error once the files are gone (a flag: no I/O). */
  assertUsable(): void;
  /** Before a commit is acknowledged: the open files still have a name (fstat on the thread pool). */
  verify(): Promise<void>;
  /** Each group commit reports here: `null` when it committed, else its error. */
  committed(error: unknown): void;
  /** `ok`, or why the store cannot take deliveries (for `/readyz`). */
  check(): 'ok' | string;
  start(): void;
  close(): void;
}

const RETRY_AFTER_SECONDS = 30;

/**
 * Notices when the database or its WAL is deleted or replaced while the server runs: SQLite
 * keeps writing into the unlinked inode and every later acknowledgement would be lost at
 * restart. The files are opened once here; each group commit fstats them (link count) before it
 * is answered, and a timer compares the path's inode every second. Gone is final until a
 * restart; failing commits (disk full, I/O error) only last until one succeeds.
 */
export function createStoreHealth({ path, logger, intervalMs = 1000 }: StoreHealthOptions): StoreHealth {
  const fds = new Map<string, { fd: number; ino: number; dev: number }>();
  const track = (file: string) => {
    if (fds.has(file)) return;
    try {
      const fd = openSync(file, 'r');
      fds.set(file, { fd, ...identity(fd) });
    } catch {
      // Not there yet (the WAL appears with the first write): tracked from the next check.
    }
  };
  const files = [path, `${path}-wal`];
  files.forEach(track);

  let gone: string | null = null;
  let failing: string | null = null;
  const markGone = (reason: string) => {
    if (gone) return;
    gone = reason;
    logger.error({ database: path, reason }, 'database file gone');
  };
  const fstatAsync = (fd: number) => new Promise<Stats>((resolve, reject) => fstat(fd, (e, s) => (e ? reject(e) : resolve(s))));
  const statAsync = (file: string) => new Promise<Stats | null>((resolve) => stat(file, (e, s) => resolve(e ? null : s)));

  async function verify(): Promise<void> {
    if (!gone) {
      const open = [...fds.entries()];
      const stats = await Promise.all(open.map(([, f]) => fstatAsync(f.fd)));
      stats.forEach((s, i) => {
        if (s.nlink === 0) markGone(`${open[i]![0]} was deleted`);
      });
    }
    if (gone) throw goneError(gone);
  }

  async function periodic(): Promise<void> {
    files.forEach(track);
    await verify().catch(() => undefined);
    for (const [file, f] of fds) {
      const s = await statAsync(file);
      if (!gone && (s === null || s.ino !== f.ino || s.dev !== f.dev)) markGone(`${file} was ${s === null ? 'deleted' : 'replaced'}`);
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let running = false;
  return {
    assertUsable() {
      if (gone) throw goneError(gone);
    },
    verify,
    committed(error) {
      if (error === null || error === undefined) {
        if (failing) logger.info({ database: path }, 'commits succeed again');
        failing = null;
      } else {
        failing = (error as Error).message ?? String(error);
      }
    },
    check() {
      if (gone) return `${gone}: restart podhook with the database in place`;
      if (failing) return `commits failing: ${failing}`;
      return 'ok';
    },
    start() {
      timer ??= setInterval(() => {
        if (running) return;
        running = true;
        void periodic().finally(() => (running = false));
      }, intervalMs).unref();
    },
    close() {
      clearInterval(timer);
      for (const { fd } of fds.values()) closeSync(fd);
      fds.clear();
    },
  };
}

function identity(fd: number) {
  const { ino, dev } = fstatSync(fd);
  return { ino, dev };
}

function goneError(reason: string): UnavailableError {
  return new UnavailableError(`The database is gone (${reason}); retry later.`, 'store_gone', { retryAfterSeconds: RETRY_AFTER_SECONDS });
}
