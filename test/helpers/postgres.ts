import pg from 'pg';
import { inject } from 'vitest';
import { openPostgres } from '../../src/store/postgres/open-postgres.js';

/**
 * A fresh, empty database on the run's PostgreSQL server (test/postgres/postgres.global.ts),
 * one per call, so tests never see each other's rows (or on the server of `adminUrl`, a test's own).
 * Resolves to its DATABASE_URL.
 */
export async function freshDatabaseUrl(adminUrl = inject('postgresAdminUrl')): Promise<string> {
  return createDatabase(adminUrl);
}

/** Migrated copies are made from this process's own template (a database no one connects to). */
const templates = new Map<string, Promise<string>>();

/**
 * Like freshDatabaseUrl, with podhook's migrations already applied: a copy of a database this
 * process migrated once (`create database … template`), which takes a fraction of migrating each
 * one. For tests of the store; a test of migrating itself wants freshDatabaseUrl.
 */
export async function migratedDatabaseUrl(adminUrl = inject('postgresAdminUrl')): Promise<string> {
  let template = templates.get(adminUrl);
  if (!template) {
    template = (async () => {
      const url = await createDatabase(adminUrl, 'template');
      const opened = openPostgres(url, { max: 1 });
      try {
        await opened.migrate();
      } finally {
        await opened.close();
      }
      return new URL(url).pathname.slice(1);
    })();
    templates.set(adminUrl, template);
    template.catch(() => templates.delete(adminUrl));
  }
  return createDatabase(adminUrl, 't', await template);
}

async function createDatabase(adminUrl: string, prefix = 't', template?: string): Promise<string> {
  const admin = new URL(adminUrl);
  const name = `${prefix}_${Math.random().toString(36).slice(2, 12)}`;
  const client = new pg.Client({ connectionString: admin.href });
  await client.connect();
  try {
    await client.query(`create database ${name}${template ? ` template ${template}` : ''}`);
  } finally {
    await client.end();
  }
  admin.pathname = `/${name}`;
  return admin.href;
}
