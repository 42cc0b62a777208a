import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` writes SQLite migrations into drizzle/sqlite/; both the Node service (at
// start-up) and the Worker (wrangler d1 migrations, `migrations_dir`) apply the same files.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/store/sqlite/schema.ts',
  out: './drizzle/sqlite',
});
