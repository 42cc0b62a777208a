import { claimParams, outcomeParams, type DeliveryRow } from '../row-mapping.js';
import type { ReturningQuery } from '../store-backend.js';
import {
  attemptStatement,
  claimStatements,
  handlerRunStatement,
  leaseStatement,
  outcomeStatement,
  toClaimResult,
  type AnySqliteDatabase,
} from '../sqlite/statements.js';
import type { StoreDriver } from '../sqlite/store-driver.js';

/** D1: no interactive transactions, so every multi-statement write is one atomic `batch`. */
export function createBatchDriver(db: AnySqliteDatabase & { batch: (q: never) => Promise<unknown[]> }): StoreDriver {
  const batch = async (queries: readonly ReturningQuery[]) =>
    queries.length === 0 ? [] : ((await db.batch(queries as never)) as unknown[][]);
  return {
    async claim(deliveries) {
      // Bump first, then insert: a batch cannot branch, and the bump must not see the new row.
      const results = await batch(
        deliveries.flatMap((d) => {
          const { bump, insert } = claimStatements(db, claimParams(d));
          return [bump, insert];
        }),
      );
      return deliveries.map((_, i) => toClaimResult(results[2 * i + 1]!, results[2 * i] as { deliveryCount: number }[]));
    },
    async leaseDue(params) {
      return (await leaseStatement(db, params)) as DeliveryRow[];
    },
    async completeDispatch(outcomes) {
      const queries: ReturningQuery[] = [];
      const outcomeAt: number[] = [];
      for (const o of outcomes) {
        const { outcome, runs } = outcomeParams(o);
        for (const r of runs) queries.push(handlerRunStatement(db, r), attemptStatement(db, r));
        outcomeAt.push(queries.push(outcomeStatement(db, outcome)) - 1);
      }
      const results = (await batch(queries)) as { eventId: string }[][];
      return outcomeAt.flatMap((at) => results[at]!.map((r) => r.eventId));
    },
    atomic: batch,
  };
}
