/**
 * Counts of the work podhook does per delivery, for the work-count test
 * (test/node/work-count.test.ts): off unless a test turns them on, and then one increment each,
 * kept in a SharedArrayBuffer so that handler threads count into the same slots. With counting off
 * each `countWork` is one comparison. SQLite's own test suite counts VM steps per query the same
 * way: a regression shows at the change that made it.
 */
export const WORK_KINDS = [
  /** Every SQL statement run on SQLite (BEGIN and COMMIT included). */
  'statement',
  /** Every WAL fsync (a durable commit). */
  'sync',
  /** Messages from the receiver's thread to a handler thread, and back. */
  'message_to_thread',
  'message_from_thread',
  /** A delivery's body decoded and parsed as JSON. */
  'body_parse',
  /** A payload run through a zod schema (a learned one, or a handler's own). */
  'schema_run',
  /** A child logger made. */
  'logger_child',
  /** A log line written (any logger, any level that is written). */
  'log_line',
  /** A new delivery matched against waiting runs (ctx.waitForEvent): only while a run may wait (src/core/waits/waiters-flag.ts). */
  'wait_check',
  /** setTimeout / setInterval armed, and setImmediate queued (counted where the test patches them). */
  'timer',
  'immediate',
] as const;
export type WorkKind = (typeof WORK_KINDS)[number];

const KEY = Symbol.for('podhook.workCounts');
type Holder = { [KEY]?: Int32Array };

let counts: Int32Array | undefined = (globalThis as Holder)[KEY];

/** Counts one unit of `kind`, when counting is on. */
export function countWork(kind: WorkKind): void {
  if (counts !== undefined) Atomics.add(counts, WORK_KINDS.indexOf(kind), 1);
}

/** Turns counting on in this thread, into `buffer` (shared with other threads), or a new one. */
export function enableWorkCounts(buffer: SharedArrayBuffer = new SharedArrayBuffer(4 * WORK_KINDS.length)): SharedArrayBuffer {
  counts = new Int32Array(buffer);
  (globalThis as Holder)[KEY] = counts;
  return buffer;
}

/** The buffer counting goes to, when it is on (handler threads are started with it). */
export function workCountsBuffer(): SharedArrayBuffer | undefined {
  return counts?.buffer as SharedArrayBuffer | undefined;
}

/** The counts so far, by kind. */
export function readWorkCounts(): Record<WorkKind, number> {
  return Object.fromEntries(WORK_KINDS.map((k, i) => [k, counts ? Atomics.load(counts, i) : 0])) as Record<WorkKind, number>;
}
