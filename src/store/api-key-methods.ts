import { eq } from 'drizzle-orm';
import { DEFAULT_ACCOUNT, type ApiKeyStore } from '../core/pods/api-key-store.js';
import type { StoreBackend } from './store-backend.js';

/** The compute API key kept by `podhook secrets add --api-key`, the same queries on every backend. */
export function apiKeyMethods({ db, tables: { apiKeys } }: StoreBackend): ApiKeyStore {
  return {
    async putApiKey({ account, secret, fingerprint, createdAt }) {
      const before = await db.select({ account: apiKeys.account }).from(apiKeys).where(eq(apiKeys.account, account));
      await db
        .insert(apiKeys)
        .values({ account, secret, fingerprint, createdAt })
        .onConflictDoUpdate({ target: apiKeys.account, set: { secret, fingerprint, createdAt } });
      return before.length > 0;
    },
    async readApiKey(account = DEFAULT_ACCOUNT) {
      const [row] = await db.select().from(apiKeys).where(eq(apiKeys.account, account)).limit(1);
      return row ? { account: row.account, secret: row.secret, fingerprint: row.fingerprint, createdAt: Number(row.createdAt) } : null;
    },
    async removeApiKey(account = DEFAULT_ACCOUNT) {
      const removed = await db.delete(apiKeys).where(eq(apiKeys.account, account)).returning({ account: apiKeys.account });
      return removed.length > 0;
    },
  };
}
