import { claimParams, outcomeParams, type DeliveryRow } from '../row-mapping.js';
import { buildEachCall, type ReturningQuery } from '../store-backend.js';
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
import * as schema from '../sqlite/schema.js';
import { orderStatements } from '../order-statements.js';

/** D1: no interactive transactions, so every multi-statement write is one atomic `batch`. */
export function createBatchDriver(db: AnySqliteDatabase & { batch: (q: never) => Promise<unknown[]> }): StoreDriver {
  const batch = async (queries: readonly ReturningQuery[]) =>
    queries.length === 0 ? [] : ((await db.batch(queries as never)) as unknown[][]);
  const order = orderStatements(schema, buildEachCall);
  return {
    async claim(deliveries) {
      // Bump first, then insert: a batch cannot branch, and the bump must not see the new row.
      const results = await batch(
        deliveries.flatMap((d) => {
          const { bump, insert } = claimStatements(db, claimParams(d));
          // A copy finds its rows made already; a conflict has no row of this type to make them for.
          return [bump, insert, ...order.entries(db, d)];
        }),
      );
      let at = 0;
      return deliveries.map((d) => {
        const [bumped, inserted] = [results[at], results[at + 1]];
        at += 2 + (d.order?.length ?? 0);
        return toClaimResult(inserted!, bumped as { deliveryCount: number }[]);
      });
    },
    async leaseDue(params) {
      return (await leaseStatement(db, params)) as DeliveryRow[];
    },
    async completeDispatch(outcomes) {
      const queries: ReturningQuery[] = [];
      const outcomeAt: number[] = [];
      for (const o of outcomes) {
        const { outcome, runs } = outcomeParams(o);
        const settling = o.order && order.settling(o);
        if (settling) queries.push(...settling.before(db));
        for (const r of runs) queries.push(handlerRunStatement(db, r), attemptStatement(db, r));
        outcomeAt.push(queries.push(outcomeStatement(db, outcome)) - 1);
        if (settling) queries.push(...settling.after(db));
      }
      const results = (await batch(queries)) as { eventId: string }[][];
      return outcomeAt.flatMap((at) => results[at]!.map((r) => r.eventId));
    },
    atomic: batch,
    prepare: buildEachCall,
  };
}
