import { sql, type Placeholder } from 'drizzle-orm';

/**
 * A statement's parameter: a value, or a placeholder. Statements are defined once over params:
 * D1 and PostgreSQL build them with values; better-sqlite3 prepares them once with placeholders
 * and binds values on each call (building a drizzle query costs more than running it there).
 */
export type Param<T> = T | Placeholder;
export type Params<T> = { [K in keyof T]: Param<T[K]> };

/** Placeholders named after the keys of a params object. */
export function placeholders<T extends object>(keys: readonly (keyof T & string)[]): Params<T> {
  return Object.fromEntries(keys.map((k) => [k, sql.placeholder(k)])) as Params<T>;
}
