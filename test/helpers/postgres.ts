import pg from 'pg';
import { inject } from 'vitest';

/**
 * A fresh, empty database on the run's PostgreSQL server (test/postgres/postgres.global.ts),
 * one per call, so tests never see each other's rows (or on the server of `adminUrl`, a test's own).
 * Resolves to its DATABASE_URL.
 */
export async function freshDatabaseUrl(adminUrl = inject('postgresAdminUrl')): Promise<string> {
  const admin = new URL(adminUrl);
  const name = `t_${Math.random().toString(36).slice(2, 12)}`;
  const client = new pg.Client({ connectionString: admin.href });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  admin.pathname = `/${name}`;
  return admin.href;
}
