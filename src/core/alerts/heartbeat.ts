import type { Clock } from '../clock.js';
import type { HeartbeatStore } from './heartbeat-store.js';
import type { Downtime } from './retry-outlook.js';

/** How often a running receiver records that it is up. */
export const HEARTBEAT_EVERY_MS = 30_000;

export interface HeartbeatOptions {
  store: HeartbeatStore;
  clock: Clock;
  /** A gap between heartbeats longer than this is a downtime (`ALERT_DOWNTIME_MINUTES`). */
  downtimeThresholdMs: number;
}

export interface Heartbeat {
  /**
   * Records that the receiver is up. When the previous heartbeat is older than the threshold,
   * records and resolves with the downtime between them (at start: how long it was down).
   */
  beat(): Promise<Downtime | null>;
  /** The last downtime recorded (for the inspector's banner and stats), or null. */
  lastDowntime(): Promise<Downtime | null>;
}

/**
 * Heartbeats in the store. Every process on one database beats the same record, so a second
 * process starting beside a running one finds a fresh heartbeat and reports no downtime.
 */
export function createHeartbeat({ store, clock, downtimeThresholdMs }: HeartbeatOptions): Heartbeat {
  return {
    async beat() {
      const now = clock();
      const last = await store.readHeartbeat();
      const downtime = last && now - last.beatAt > downtimeThresholdMs ? { from: last.beatAt, until: now } : null;
      await store.writeHeartbeat(now, downtime ?? undefined);
      return downtime;
    },
    async lastDowntime() {
      return (await store.readHeartbeat())?.downtime ?? null;
    },
  };
}
