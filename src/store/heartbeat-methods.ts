import { eq } from 'drizzle-orm';
import type { HeartbeatStore } from '../core/alerts/heartbeat-store.js';
import { downtimeColumns, heartbeatRecord } from './row-mapping.js';
import type { StoreBackend } from './store-backend.js';

/** Every process on one database beats this one row. */
const RECEIVER = 'receiver';

/** Heartbeat reads and writes: one small upsert every 30 s, outside the group-committed ingest writes. */
export function heartbeatMethods({ db, tables: { heartbeats } }: StoreBackend): HeartbeatStore {
  return {
    async readHeartbeat() {
      const [row] = await db.select().from(heartbeats).where(eq(heartbeats.name, RECEIVER)).limit(1);
      return row ? heartbeatRecord(row) : null;
    },
    async writeHeartbeat(beatAt, downtime) {
      const down = downtimeColumns(downtime);
      await db
        .insert(heartbeats)
        .values({ name: RECEIVER, beatAt, ...down })
        .onConflictDoUpdate({ target: heartbeats.name, set: { beatAt, ...down } });
    },
  };
}
