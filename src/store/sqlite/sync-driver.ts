import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type { ClaimResult } from '../../core/delivery.js';
import type Database from 'better-sqlite3';
import { createBatcher } from '../../core/dispatch/batcher.js';
import { claimParams, outcomeParams, type ClaimParams, type DeliveryRow, type HandlerRunParams, type OutcomeParams } from '../row-mapping.js';
import * as schema from './schema.js';
import {
  attemptStatement,
  claimInsert,
  claimStatements,
  handlerRunStatement,
  leaseStatement,
  outcomeUpdate,
  toClaimResult,
  type AnySqliteDatabase,
  type LeaseParams,
} from './statements.js';
import { orderStatements } from '../order-statements.js';
import { placeholders } from '../params.js';
import type { Prepare } from '../store-backend.js';
import { prepareRun } from './raw-statement.js';
import type { StoreDriver } from './store-driver.js';

type SyncDatabase = AnySqliteDatabase & BaseSQLiteDatabase<'sync', unknown, typeof schema> & { $client: Database.Database };

export interface SyncDriverOptions {
  /**
   * Group commit: writes are deferred with this scheduler and every write waiting at the flush
   * (ingest claims, dispatch leases and outcomes alike) shares one transaction and one fsync.
   * Node passes `setImmediate`. Without it each write commits at once (the CLI tools).
   */
  schedule?: (flush: () => void) => void;
  /**
   * How long a dispatch outcome may wait to share the next ingest commit (default 10 ms). An
   * outcome lost in a crash only means the delivery is dispatched again after its lease.
   */
  outcomeDelayMs?: number;
  /**
   * Makes a committed batch durable before any of its writes is answered (a batch of only leases
   * and outcomes, which a crash may lose, does not wait). Node passes wal-sync.ts so the event
   * loop is not blocked in SQLite's own fsync; without it the connection's `synchronous` applies.
   */
  durable?: () => Promise<void>;
  /** Each group commit reports here: `null` when it committed (and synced), else its error. */
  onCommit?: (error: unknown) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

const NEW: ClaimResult = Object.freeze({ outcome: 'new' });

/**
 * The better-sqlite3 driver: the hot statements prepared once; writes group-committed. A write
 * that fails rejects alone: the batch is then run again one write per transaction.
 */
export function createSyncDriver(db: SyncDatabase, { schedule, outcomeDelayMs = 10, durable: makeDurable, onCommit }: SyncDriverOptions = {}): StoreDriver {
  const client = db.$client;
  const claimParamsAt = placeholders<ClaimParams>([
    'eventId', 'eventType', 'signatureT', 'contentDigest', 'body', 'headers', 'receivedAt', 'status', 'lastError', 'nextAttemptAt',
    'leaseOwner', 'leaseUntil', 'claimId', 'traceParent',
  ]);
  const insert = prepareRun<ClaimParams>(client, claimInsert(db, claimParamsAt));
  const bumpStmt = claimStatements(db, claimParamsAt).bump.prepare();
  const leaseStmt = leaseStatement(db, placeholders<LeaseParams>(['owner', 'claimId', 'now', 'leaseUntil', 'limit'])).prepare();
  const runParams = placeholders<HandlerRunParams>(['eventId', 'handler', 'status', 'attempts', 'lastError', 'updatedAt', 'durationMs', 'claimId', 'outcome', 'ranBy']);
  const runStmt = handlerRunStatement(db, runParams).prepare();
  const attemptStmt = attemptStatement(db, runParams).prepare();
  const outcome = prepareRun<OutcomeParams>(client, outcomeUpdate(db, placeholders<OutcomeParams>([
    'eventId', 'claimId', 'status', 'attempts', 'lastError', 'nextAttemptAt', 'processedAt', 'durationMs', 'ranBy',
  ])));

  // Statements defined over params, prepared on first use (a deployment without ordered handlers never prepares theirs).
  const prepare: Prepare = (keys, build) => {
    let prepared: { all(values: unknown): unknown }[] | undefined;
    return (_tx, values) => {
      prepared ??= build(db, placeholders(keys)).map((q) => (q as unknown as { prepare(): { all(values: unknown): unknown } }).prepare());
      return prepared.map((statement) => ({ all: () => statement.all(values) }));
    };
  };
  const order = orderStatements(schema, prepare);

  // Which write was running when the shared transaction threw (-1: none, BEGIN or COMMIT did).
  let failedAt = -1;
  const runAll = client.transaction((ops: readonly (() => unknown)[]): unknown[] => {
    const values: unknown[] = [];
    for (let i = 0; i < ops.length; i++) {
      failedAt = i;
      values.push(ops[i]!());
    }
    failedAt = -1;
    return values;
  });
  const execute = (ops: readonly (() => unknown)[]): Settled[] => {
    failedAt = -1;
    try {
      return runAll.immediate(ops).map((value) => ({ ok: true, value }));
    } catch (error) {
      // The transaction rolled back. A failure outside the writes (BEGIN, COMMIT, a lock) fails
      // them all; a failing write is found by running each alone, so only it rejects. This
      // costs nothing while every write succeeds, unlike a savepoint around each.
      if (failedAt < 0 || ops.length === 1) return ops.map(() => ({ ok: false, error }));
      return ops.map((op) => {
        try {
          return { ok: true, value: runAll.immediate([op])[0] };
        } catch (alone) {
          return { ok: false, error: alone };
        }
      });
    }
  };
  type Write = { op: () => unknown; durable: boolean };
  const submit = schedule
    ? createBatcher<Write, Settled>({
        execute: async (writes) => {
          const settled = execute(writes.map((w) => w.op));
          // Only a batch holding a write that must survive a crash waits for the sync (which
          // then covers every earlier commit too).
          try {
            if (makeDurable && writes.some((w) => w.durable)) await makeDurable();
          } catch (error) {
            onCommit?.(error);
            throw error;
          }
          onCommit?.(settled.some((s) => s.ok) ? null : (settled[0] as { error: unknown }).error);
          return settled;
        },
        schedule,
        lazySchedule: (flush) => void setTimeout(flush, outcomeDelayMs),
      })
    : async (w: Write) => execute([w.op])[0]!;
  /**
   * `durable: false` for writes a crash may lose: a lease (it dies with the process that took
   * it) and a dispatch outcome (the delivery is dispatched again once its lease runs out).
   * `lazy`: may wait `outcomeDelayMs` to share a later commit.
   */
  const write = async <T>(op: () => T, { lazy = false, durable = true } = {}): Promise<T> => {
    const settled = await submit({ op, durable }, { lazy });
    if (!settled.ok) throw settled.error;
    return settled.value as T;
  };

  return {
    claim: (batch) =>
      write(() =>
        batch.map((d) => {
          const values = claimParams(d);
          const inserted = insert(values) > 0;
          if (d.order && inserted) for (const q of order.entries(db, d)) q.all();
          return inserted ? NEW : toClaimResult([], bumpStmt.all(values as never) as { deliveryCount: number }[]);
        }),
      ),
    leaseDue: (params) => write(() => leaseStmt.all(params as never) as DeliveryRow[], { durable: false }),
    // Outcomes need no commit of their own: they join the next ingest commit (one fsync for
    // both), or commit after `outcomeDelayMs` when no delivery arrives, without a sync.
    completeDispatch: (outcomes) =>
      write(
        () => {
          const recorded: string[] = [];
          for (const o of outcomes) {
            const { outcome: params, runs, history } = outcomeParams(o);
            const settling = o.order && order.settling(o);
            if (settling) for (const q of settling.before(db)) q.all();
            for (const run of history) attemptStmt.all(run as never);
            for (const run of runs) {
              runStmt.all(run as never);
              attemptStmt.all(run as never);
            }
            if (outcome(params) > 0) recorded.push(o.eventId);
            if (settling) for (const q of settling.after(db)) q.all();
          }
          return recorded;
        },
        { lazy: true, durable: false },
      ),
    atomic: (queries, { durable = true } = {}) => write(() => queries.map((q) => q.all() as unknown[]), { durable }),
    prepare,
  };
}
