import { asc } from 'drizzle-orm';
import type { SecretStore } from '../core/delivery-store.js';
import { fromSecretRow, secretMatch, secretRow } from './row-mapping.js';
import type { StoreBackend } from './store-backend.js';

/** The signing secrets kept by `podhook register` and `podhook secrets`, the same queries on every backend. */
export function secretMethods({ db, tables }: StoreBackend): SecretStore {
  const { webhookSecrets } = tables;
  return {
    async listSecrets() {
      const rows = await db.select().from(webhookSecrets).orderBy(asc(webhookSecrets.createdAt), asc(webhookSecrets.id));
      return rows.map(fromSecretRow);
    },
    async addSecret(secret) {
      const inserted = await db.insert(webhookSecrets).values(secretRow(secret)).onConflictDoNothing().returning({ id: webhookSecrets.id });
      return inserted.length > 0;
    },
    async removeSecret(idOrFingerprint) {
      const removed = await db.delete(webhookSecrets).where(secretMatch(webhookSecrets, idOrFingerprint)).returning({ id: webhookSecrets.id });
      return removed.length;
    },
  };
}
