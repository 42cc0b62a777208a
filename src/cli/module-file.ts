import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { UsageError } from './command.js';

/** The largest module `podhook schemas` reads back: what it writes is a few hundred KB at most. */
export const MAX_MODULE_BYTES = 16 * 1024 * 1024;

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? (error as Error).message;

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isSocket()) return 'a socket';
  return 'not a file';
}

/**
 * The folders to create for a new file at `path`, outermost first: up to the nearest one that
 * exists, which must be a folder. One `lstat` per level, so a path under `/proc` (where
 * `mkdirSync(…, { recursive: true })` retries forever) cannot loop.
 */
function missingFolders(path: string, flag: string): string[] {
  const missing: string[] = [];
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    let stat: Stats;
    try {
      stat = statSync(folder);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' || dirname(folder) === folder) throw new UsageError(`${flag} ${path}: ${folder}: ${errorCode(error)}`);
      missing.unshift(folder);
      continue;
    }
    if (!stat.isDirectory()) throw new UsageError(`${flag} ${path}: ${folder} is ${kindOf(stat)}, not a folder`);
    return missing;
  }
}

/**
 * What is at an output path: `'file'` (a regular file, replaced when written) or `'new'` (nothing,
 * and its folder exists or can be made under one that does). Anything else (a device, a FIFO, a
 * folder, a symbolic link, an empty path) is a `UsageError`: one line, exit 2, nothing read or written.
 */
export function checkOutputPath(path: string, flag = '--out'): 'file' | 'new' {
  if (path === '') throw new UsageError(`${flag} must name a file`);
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw new UsageError(`${flag} ${path}: ${errorCode(error)}`);
    missingFolders(path, flag);
    return 'new';
  }
  if (!stat.isFile()) throw new UsageError(`${flag} ${path} is ${kindOf(stat)}, not a regular file`);
  return 'file';
}

/**
 * A regular file's text, at most `maxBytes`: opened without following a link or waiting on a FIFO,
 * checked to be a regular file on the descriptor read from, and read in pieces up to the cap (a
 * file under /proc says it has 0 bytes). Throws an `Error` (exit 1) when it is larger, or the
 * system's error when it cannot be read; the caller names the path.
 */
export function readTextFile(path: string, maxBytes = MAX_MODULE_BYTES): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new UsageError(`${path} is ${kindOf(stat)}, not a regular file`);
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(65_536);
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      size += n;
      if (size > maxBytes) throw new Error(`larger than ${maxBytes} bytes: not a module podhook schemas wrote`);
      chunks.push(chunk.subarray(0, n));
    }
    return Buffer.concat(chunks, size).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `text` at `path` (checked with `checkOutputPath`) beside it first, then renames: a reader
 * (tsc, an editor, --check) never sees half a module, and a failed write leaves no temporary file.
 * The path is checked again just before the rename, so what appeared there meanwhile is not replaced.
 */
export function writeFileAtomically(path: string, text: string, flag = '--out'): void {
  checkOutputPath(path, flag);
  for (const folder of missingFolders(path, flag)) {
    try {
      mkdirSync(folder);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw new UsageError(`${flag} ${path}: cannot create ${folder}: ${errorCode(error)}`);
    }
  }
  const temporary = `${path}.${process.pid}.tmp`;
  let created = false;
  try {
    writeFileSync(temporary, text, { flag: 'wx' });
    created = true;
    checkOutputPath(path, flag);
    renameSync(temporary, path);
    created = false;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${flag} ${path}: cannot write it: ${errorCode(error)}`);
  } finally {
    if (created) rmSync(temporary, { force: true });
  }
}
