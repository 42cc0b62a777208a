import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding podhook's package.json, whether running from src/ (tsx) or dist/ (compiled). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'drizzle'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('podhook: cannot find the package folder (package.json and drizzle/)');
    dir = parent;
  }
}

/** The SQL migrations drizzle-kit generated for one dialect: drizzle/sqlite/ (better-sqlite3 and D1) or drizzle/postgres/. */
export function migrationsFolder(dialect: 'sqlite' | 'postgres'): string {
  return join(packageRoot(), 'drizzle', dialect);
}
