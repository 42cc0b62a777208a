import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

interface Tail {
  dev: number;
  ino: number;
  offset: number;
  /** Bytes of a line not yet ended by its newline (a writer mid-append). */
  partial: Buffer;
  values: unknown[];
}

const tails = new Map<string, Tail>();

/**
 * Every complete line of an append-only JSON-lines file (a fixture's $RECORD_FILE), parsed. A file
 * polled while a server appends to it is read from where the last call stopped, not again from
 * its start: a test polling 10,000 lines every 100 ms parsed them all each time. A line not yet
 * ended by its newline waits for the next call. A file replaced or cut short is read afresh; a
 * missing one has no lines.
 */
export function readJsonLines<T>(file: string): T[] {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  try {
    const { dev, ino, size } = fstatSync(fd);
    let tail = tails.get(file);
    if (!tail || tail.dev !== dev || tail.ino !== ino || size < tail.offset) {
      tail = { dev, ino, offset: 0, partial: Buffer.alloc(0), values: [] };
      tails.set(file, tail);
    }
    if (size > tail.offset) {
      const fresh = Buffer.alloc(size - tail.offset);
      let read = 0;
      while (read < fresh.length) {
        const n = readSync(fd, fresh, read, fresh.length - read, tail.offset + read);
        if (n === 0) break;
        read += n;
      }
      tail.offset += read;
      const bytes = Buffer.concat([tail.partial, fresh.subarray(0, read)]);
      const end = bytes.lastIndexOf(0x0a);
      tail.partial = Buffer.from(end < 0 ? bytes : bytes.subarray(end + 1));
      if (end >= 0) {
        for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) if (line.trim() !== '') tail.values.push(JSON.parse(line));
      }
    }
    return tail.values.slice() as T[];
  } finally {
    closeSync(fd);
  }
}
