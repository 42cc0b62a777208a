import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type Database from 'better-sqlite3';
import { createBatcher } from '../core/batcher.js';
import * as schema from './schema.js';
import {
  claimParams,
  claimStatements,
  handlerRunStatement,
  leaseStatement,
  outcomeParams,
  outcomeStatement,
  placeholders,
  toClaimResult,
  type AnySqliteDatabase,
  type ClaimParams,
  type DeliveryRow,
  type HandlerRunParams,
  type LeaseParams,
  type OutcomeParams,
} from './statements.js';
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
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * The better-sqlite3 driver: the hot statements prepared once; writes group-committed. Each
 * write runs in its own savepoint inside the shared transaction, so one failing write rejects
 * alone while the others commit.
 */
export function createSyncDriver(db: SyncDatabase, { schedule, outcomeDelayMs = 10 }: SyncDriverOptions = {}): StoreDriver {
  const client = db.$client;
  const claim = claimStatements(db, placeholders<ClaimParams>([
    'eventId', 'eventType', 'signatureT', 'contentDigest', 'body', 'headers', 'receivedAt', 'status', 'lastError', 'nextAttemptAt',
    'leaseOwner', 'leaseUntil',
  ]));
  const insertStmt = claim.insert.prepare();
  const bumpStmt = claim.bump.prepare();
  const leaseStmt = leaseStatement(db, placeholders<LeaseParams>(['owner', 'now', 'leaseUntil', 'limit'])).prepare();
  const runStmt = handlerRunStatement(db, placeholders<HandlerRunParams>(['eventId', 'handler', 'status', 'attempts', 'lastError', 'updatedAt'])).prepare();
  const outcomeStmt = outcomeStatement(db, placeholders<OutcomeParams>([
    'eventId', 'owner', 'status', 'attempts', 'lastError', 'nextAttemptAt', 'processedAt',
  ])).prepare();

  const runAll = client.transaction((ops: Array<() => unknown>): Settled[] =>
    ops.map((op) => {
      try {
        return { ok: true, value: client.transaction(op)() };
      } catch (error) {
        return { ok: false, error };
      }
    }),
  );
  const submit = schedule
    ? createBatcher<() => unknown, Settled>({
        execute: async (ops) => runAll.immediate([...ops]),
        schedule,
        lazySchedule: (flush) => void setTimeout(flush, outcomeDelayMs),
      })
    : async (op: () => unknown) => runAll.immediate([op])[0]!;
  const write = async <T>(op: () => T, options?: { lazy: boolean }): Promise<T> => {
    const settled = await submit(op, options);
    if (!settled.ok) throw settled.error;
    return settled.value as T;
  };

  return {
    claim: (batch) =>
      write(() =>
        batch.map((d) => {
          const values = claimParams(d) as unknown as Record<string, unknown>;
          const inserted = insertStmt.all(values) as unknown[];
          return toClaimResult(inserted, inserted.length > 0 ? [] : (bumpStmt.all(values) as { deliveryCount: number }[]));
        }),
      ),
    leaseDue: (params) => write(() => leaseStmt.all(params as never) as DeliveryRow[]),
    // Outcomes need no commit of their own: they join the next ingest commit (one fsync for
    // both), or commit after `outcomeDelayMs` when no delivery arrives.
    completeDispatch: (outcomes) =>
      write(
        () => {
          for (const o of outcomes) {
            const { outcome, runs } = outcomeParams(o);
            for (const run of runs) runStmt.all(run as never);
            outcomeStmt.all(outcome as never);
          }
        },
        { lazy: true },
      ),
    atomic: (queries) => write(() => queries.map((q) => q.all() as unknown[])),
  };
}
