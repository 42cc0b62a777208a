import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type pg from 'pg';

/** The advisory lock key every podhook replica takes to migrate ("podhook" in ASCII). */
export const MIGRATION_LOCK_KEY = 0x706f6468_6f6f6bn;

/**
 * Applies drizzle-kit's PostgreSQL migrations on one session holding `pg_advisory_lock`: N
 * replicas starting at once queue on the lock, the first migrates, the others find nothing left.
 */
export async function migrateWithLock(pool: pg.Pool, migrationsFolder: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    try {
      await migrate(drizzle(client), { migrationsFolder });
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]);
    }
  } finally {
    client.release();
  }
}
