// Applies drizzle/sqlite/ to every test database, recording them in d1_migrations as
// `wrangler d1 migrations apply` does (one ledger per database). Already-applied files are skipped.
import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

for (const db of [env.DB, env.CONTRACT_DB, env.STORE_DB]) await applyD1Migrations(db, env.TEST_MIGRATIONS);
