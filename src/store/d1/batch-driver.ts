import { DrizzleQueryError, getTableColumns, is, Param, Placeholder } from 'drizzle-orm';
import { claimParams, outcomeParams, type ClaimParams, type DeliveryRow, type HandlerRunParams, type OutcomeParams } from '../row-mapping.js';
import { placeholders } from '../params.js';
import { buildEachCall, type ReturningQuery } from '../store-backend.js';
import {
  attemptStatement,
  claimStatements,
  handlerRunStatement,
  leaseStatement,
  outcomeStatement,
  toClaimResult,
  type AnySqliteDatabase,
  type LeaseParams,
} from '../sqlite/statements.js';
import type { StoreDriver } from '../sqlite/store-driver.js';
import * as schema from '../sqlite/schema.js';
import { orderStatements } from '../order-statements.js';
import { compileStatement, type CompilableQuery, type CompiledStatement } from '../compile-statement.js';
import { bytesToHex } from './hex.js';
import { drizzleEntry, type BatchEntry } from './d1-statement.js';

type Row = Record<string, unknown>;

/** The hot statements (statements.ts) over placeholders, compiled by drizzle. */
function compileHot(db: AnySqliteDatabase) {
  const claim = claimStatements(
    db,
    placeholders<ClaimParams>([
      'eventId', 'eventType', 'signatureT', 'contentDigest', 'body', 'headers', 'receivedAt', 'status', 'lastError', 'nextAttemptAt',
      'leaseOwner', 'leaseUntil', 'claimId', 'traceParent',
    ]),
  );
  const run = placeholders<HandlerRunParams>(['eventId', 'handler', 'status', 'attempts', 'lastError', 'updatedAt', 'durationMs', 'claimId', 'outcome', 'ranBy']);
  return {
    bump: compileStatement<ClaimParams>(claim.bump),
    insert: blobsAsHex<ClaimParams>(claim.insert, ['body', 'contentDigest']),
    handlerRun: compileStatement<HandlerRunParams>(handlerRunStatement(db, run)),
    attempt: compileStatement<HandlerRunParams>(attemptStatement(db, run)),
    outcome: compileStatement<OutcomeParams>(
      outcomeStatement(db, placeholders<OutcomeParams>(['eventId', 'claimId', 'status', 'attempts', 'lastError', 'nextAttemptAt', 'processedAt', 'durationMs', 'ranBy'])),
    ),
    lease: compileStatement<LeaseParams>(leaseStatement(db, placeholders<LeaseParams>(['owner', 'claimId', 'now', 'leaseUntil', 'limit']))),
  };
}

/**
 * Compiled once per isolate: SQL text and the functions that order values are not I/O objects,
 * and the SQL is the same for every D1 database.
 */
let hot: ReturnType<typeof compileHot> | undefined;

/**
 * A statement whose BLOB placeholders `names` are bound as hex text and decoded by SQLite's
 * `unhex()`: D1's client sends a Uint8Array as a JSON array of numbers (a number built, written
 * and parsed for each byte: most of the claim's CPU in the isolate for a 1 KiB body), hex text as
 * one string. The stored bytes are the same.
 */
function blobsAsHex<P extends object>(query: CompilableQuery, names: readonly string[]): CompiledStatement<P> {
  const compiled = compileStatement<P>(query);
  const { params } = query.toSQL();
  const at = params.flatMap((p, i) => (is(p, Param) && is(p.value, Placeholder) && names.includes((p.value as Placeholder).name) ? [i] : []));
  let n = -1;
  const sql = compiled.sql.replace(/\?/g, (mark) => (at.includes(++n) ? 'unhex(?)' : mark));
  // Each `?` is one parameter (drizzle writes no other): otherwise the positions above would be wrong.
  if (at.length !== names.length || n + 1 !== params.length) throw new Error(`blobsAsHex: cannot place ${names.join(', ')} in ${compiled.sql}`);
  return {
    sql,
    values(p) {
      const values = compiled.values(p);
      for (const i of at) values[i] = bytesToHex(values[i] as Uint8Array);
      return values;
    },
  };
}

/** D1 answers rows under SQL column names; these are the shapes the callers read. */
const deliveryColumns = Object.entries(getTableColumns(schema.deliveries));
const toDeliveryRow = (raw: Row): DeliveryRow => {
  const row: Row = {};
  // As drizzle maps a row: each column's decoder, except for null.
  for (const [key, column] of deliveryColumns) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as DeliveryRow;
};
const rowsOf = (result: D1Result) => result.results;
const deliveryCounts = (result: D1Result) => (result.results as Row[]).map((r) => ({ deliveryCount: r[schema.deliveries.deliveryCount.name] as number }));
const eventIds = (result: D1Result) => (result.results as Row[]).map((r) => r[schema.deliveries.eventId.name] as string);

/**
 * D1: no interactive transactions, so every multi-statement write is one atomic `batch`. The hot
 * statements (claim, outcome, lease) are compiled once and sent through D1's own API, each call
 * binding its values; an ordered handler's statements are built by drizzle per call and join the
 * same batch.
 */
export function createBatchDriver(db: AnySqliteDatabase & { batch: (q: never) => Promise<unknown[]>; $client: D1Database }): StoreDriver {
  const d1 = db.$client;
  const c = (hot ??= compileHot(db));
  /** Prepared on this database on first use; bound per call. */
  const bindable = <P>(compiled: CompiledStatement<P>) => {
    let statement: D1PreparedStatement | undefined;
    return (params: P) => (statement ??= d1.prepare(compiled.sql)).bind(...compiled.values(params));
  };
  const bump = bindable(c.bump);
  const insert = bindable(c.insert);
  const handlerRun = bindable(c.handlerRun);
  const attempt = bindable(c.attempt);
  const outcome = bindable(c.outcome);
  const lease = bindable(c.lease);

  /** One atomic batch; resolves with each entry's rows. */
  const send = async (entries: readonly BatchEntry[]): Promise<unknown[][]> => {
    if (entries.length === 0) return [];
    const results = await d1.batch(entries.map((e) => e.statement));
    return results.map((result, i) => entries[i]!.rows(result));
  };
  const batch = async (queries: readonly ReturningQuery[]) =>
    queries.length === 0 ? [] : ((await db.batch(queries as never)) as unknown[][]);
  const order = orderStatements(schema, buildEachCall);
  const built = (queries: readonly ReturningQuery[]) => queries.map((q) => drizzleEntry(d1, q));

  return {
    async claim(deliveries) {
      // Bump first, then insert: a batch cannot branch, and the bump must not see the new row.
      const entries: BatchEntry[] = [];
      for (const d of deliveries) {
        const values = claimParams(d);
        // A copy finds its rows made already; a conflict has no row of this type to make them for.
        entries.push({ statement: bump(values), rows: deliveryCounts }, { statement: insert(values), rows: rowsOf });
        if (d.order) entries.push(...built(order.entries(db, d)));
      }
      const results = await send(entries);
      let at = 0;
      return deliveries.map((d) => {
        const [bumped, inserted] = [results[at], results[at + 1]];
        at += 2 + (d.order?.length ?? 0);
        return toClaimResult(inserted!, bumped as { deliveryCount: number }[]);
      });
    },
    async leaseDue(params) {
      try {
        return (await lease(params).all<Row>()).results.map(toDeliveryRow);
      } catch (error) {
        // As drizzle reports a failed query run alone (a batch's error it passes on as D1 threw it).
        throw new DrizzleQueryError(c.lease.sql, c.lease.values(params), error as Error);
      }
    },
    async completeDispatch(outcomes) {
      const entries: BatchEntry[] = [];
      const outcomeAt: number[] = [];
      for (const o of outcomes) {
        const { outcome: params, runs, history } = outcomeParams(o);
        const settling = o.order && order.settling(o);
        if (settling) entries.push(...built(settling.before(db)));
        for (const h of history) entries.push({ statement: attempt(h), rows: rowsOf });
        for (const r of runs) entries.push({ statement: handlerRun(r), rows: rowsOf }, { statement: attempt(r), rows: rowsOf });
        outcomeAt.push(entries.push({ statement: outcome(params), rows: eventIds }) - 1);
        if (settling) entries.push(...built(settling.after(db)));
      }
      const results = (await send(entries)) as string[][];
      return outcomeAt.flatMap((at) => results[at]!);
    },
    atomic: batch,
    prepare: buildEachCall,
  };
}
