/** D1 calls seen so far: round trips (a batch, an exec, one statement run alone) and the statements they carried. */
export interface D1Counts {
  roundTrips: number;
  statements: number;
  /** The SQL of each statement, in the order sent (for a failing assertion's message). */
  sql: string[];
}

export interface CountingD1 {
  /** The binding to hand the Worker: the real D1 database, every call counted. */
  db: D1Database;
  /** The counts since the last `take` (or the start), reset. */
  take(): D1Counts;
  /** Makes every call fail from now on (`true`), or only calls whose SQL matches. */
  failWhen(match: ((sql: string) => boolean) | null): void;
}

/**
 * The D1 binding with its calls counted: what a test reads to assert how many D1 round trips a
 * delivery or a cron run costs. The real database answers; statements stay D1's own objects (a
 * batch takes only those), their methods wrapped on the instance.
 */
export function countingD1(real: D1Database): CountingD1 {
  let counts: D1Counts = { roundTrips: 0, statements: 0, sql: [] };
  let failing: ((sql: string) => boolean) | null = null;
  const sqlOf = new WeakMap<D1PreparedStatement, string>();
  const check = (sql: string[]) => {
    if (failing && sql.some(failing)) throw new Error('D1_ERROR: the test made this call fail');
  };
  const watch = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    sqlOf.set(statement, sql);
    const bind = statement.bind.bind(statement);
    statement.bind = (...values: unknown[]) => watch(bind(...values), sql);
    for (const method of ['all', 'first', 'run', 'raw'] as const) {
      const original = (statement[method] as (...a: unknown[]) => Promise<unknown>).bind(statement);
      (statement as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
        counts.roundTrips++;
        counts.statements++;
        counts.sql.push(sql);
        check([sql]);
        return original(...args);
      };
    }
    return statement;
  };
  const db = {
    prepare: (sql: string) => watch(real.prepare(sql), sql),
    async batch(statements: D1PreparedStatement[]) {
      const sql = statements.map((s) => sqlOf.get(s) ?? '?');
      counts.roundTrips++;
      counts.statements += statements.length;
      counts.sql.push(...sql);
      check(sql);
      return real.batch(statements);
    },
    async exec(query: string) {
      counts.roundTrips++;
      counts.statements++;
      counts.sql.push(query);
      check([query]);
      return real.exec(query);
    },
    dump: () => (real as unknown as { dump(): Promise<ArrayBuffer> }).dump(),
    withSession: (...args: unknown[]) => (real as unknown as { withSession(...a: unknown[]): unknown }).withSession(...args),
  } as unknown as D1Database;
  return {
    db,
    take() {
      const taken = counts;
      counts = { roundTrips: 0, statements: 0, sql: [] };
      return taken;
    },
    failWhen(match) {
      failing = match;
    },
  };
}
