import { eq } from 'drizzle-orm';
import type { ListenCursorStore } from '../core/transfer/listen-cursor-store.js';
import type { StoreBackend } from './store-backend.js';

/** `podhook listen`'s position per remote: one small upsert per page read, never on the ingest path. */
export function listenCursorMethods({ db, tables: { listenCursors } }: StoreBackend): ListenCursorStore {
  return {
    async readListenPosition(remote) {
      const [row] = await db.select().from(listenCursors).where(eq(listenCursors.remote, remote)).limit(1);
      return row ? { cursor: row.cursor, since: row.since } : null;
    },
    async writeListenPosition(remote, { cursor, since }, now) {
      await db
        .insert(listenCursors)
        .values({ remote, cursor, since, updatedAt: now })
        .onConflictDoUpdate({ target: listenCursors.remote, set: { cursor, since, updatedAt: now } });
    },
  };
}
