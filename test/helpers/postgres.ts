import pg from 'pg';
import { inject } from 'vitest';

/**
 * A fresh, empty database on the run's PostgreSQL server (test/postgres/postgres.global.ts),
 * one per call, so tests never see each other's rows. Resolves to its DATABASE_URL.
 */
export async function freshDatabaseUrl(): Promise<string> {
  const admin = new URL(inject('postgresAdminUrl'));
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
