/** One statement of a D1 batch, and how its result becomes the rows its caller reads. */
export interface BatchEntry {
  statement: D1PreparedStatement;
  rows(result: D1Result): unknown[];
}

/** A drizzle query built with values (an ordered handler's statement) as an entry of a raw batch, its rows mapped as drizzle's own `batch` maps them. */
export function drizzleEntry(d1: D1Database, query: unknown): BatchEntry {
  const prepared = (query as { prepare(): { getQuery(): { sql: string; params: unknown[] }; mapResult(result: unknown, isFromBatch: boolean): unknown } }).prepare();
  const { sql, params } = prepared.getQuery();
  const statement = d1.prepare(sql);
  return { statement: params.length > 0 ? statement.bind(...params) : statement, rows: (result) => prepared.mapResult(result, true) as unknown[] };
}
