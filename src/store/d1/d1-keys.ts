import { asc, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/d1';
import { DEFAULT_ACCOUNT } from '../../core/pods/api-key-store.js';
import { apiKeys, webhookSecrets } from '../sqlite/schema.js';

interface Query {
  sql: string;
  params: unknown[];
}

/** The two reads as drizzle writes them, built once per isolate: SQL text is no I/O object and the same for every D1 database. */
let compiled: { secrets: Query; apiKey: Query } | undefined;

function compile(d1: D1Database) {
  const db = drizzle(d1);
  return {
    secrets: db.select({ secret: webhookSecrets.secret }).from(webhookSecrets).orderBy(asc(webhookSecrets.createdAt), asc(webhookSecrets.id)).toSQL(),
    apiKey: db.select({ secret: apiKeys.secret }).from(apiKeys).where(eq(apiKeys.account, DEFAULT_ACCOUNT)).limit(1).toSQL(),
  };
}

/**
 * The stored signing secrets (oldest first, as `listSecrets` orders them) and the stored compute
 * API key, in one D1 round trip (one batch of two reads): what the Worker's secret source keeps
 * per isolate (`SecretSourceOptions.loadAll`).
 */
export async function readStoredKeys(d1: D1Database): Promise<{ stored: string[]; hidden: string[] }> {
  const c = (compiled ??= compile(d1));
  const [secrets, apiKey] = await d1.batch<{ secret: string }>([
    d1.prepare(c.secrets.sql).bind(...c.secrets.params),
    d1.prepare(c.apiKey.sql).bind(...c.apiKey.params),
  ]);
  return { stored: secrets!.results.map((r) => r.secret), hidden: apiKey!.results.map((r) => r.secret) };
}
