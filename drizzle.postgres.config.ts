import { defineConfig } from 'drizzle-kit';

// `npm run db:generate:postgres` writes the PostgreSQL migrations into drizzle/postgres/; a
// server on DATABASE_URL applies them at start under an advisory lock.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/postgres/schema.ts',
  out: './drizzle/postgres',
});
