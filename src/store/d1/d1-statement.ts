import { is, Param, Placeholder } from 'drizzle-orm';

/** A drizzle query over placeholders, as `toSQL()` gives it. */
export interface CompilableQuery {
  toSQL(): { sql: string; params: unknown[] };
}

/** A statement's SQL, compiled once, and the positional values it binds for one call's params. */
export interface CompiledStatement<P> {
  sql: string;
  values(params: P): unknown[];
}

/**
 * Compiles a drizzle query over placeholders (../params.ts) once: its SQL as drizzle writes it,
 * and a function that lists one call's values in the order the SQL binds them (the column's
 * encoder applied, as drizzle would). The D1 counterpart of ../sqlite/raw-statement.ts: building
 * a drizzle query (its `is()` checks, the SQL chunks, the result mapping) costs more CPU in a
 * Worker than D1's client does sending it.
 */
export function compileStatement<P extends object>(query: CompilableQuery): CompiledStatement<P> {
  const { sql, params } = query.toSQL();
  const bind = params.map((p): ((values: Record<string, unknown>) => unknown) => {
    if (is(p, Placeholder)) {
      const name = p.name;
      return (values) => values[name];
    }
    if (is(p, Param) && is(p.value, Placeholder)) {
      const name = (p.value as Placeholder).name;
      const encoder = p.encoder as { mapToDriverValue(value: unknown): unknown };
      return (values) => encoder.mapToDriverValue(values[name]);
    }
    return () => p; // a literal drizzle inlined
  });
  return { sql, values: (values) => bind.map((b) => b(values as Record<string, unknown>)) };
}

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
