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
 * Compiles a drizzle query over placeholders (params.ts) once: its SQL as drizzle writes it, and
 * a function that lists one call's values in the order the SQL binds them (the column's encoder
 * applied, as drizzle would). The hot statements run this way on better-sqlite3
 * (sqlite/raw-statement.ts) and D1 (d1/batch-driver.ts): drizzle's own prepared query maps
 * placeholders and result rows through generic code on every call, and building a query anew
 * (its `is()` checks, the SQL chunks) costs more CPU than the driver does sending it.
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
    return () => p; // a literal drizzle inlined (defaults such as delivery_count = 1)
  });
  return { sql, values: (values) => bind.map((b) => b(values as Record<string, unknown>)) };
}
