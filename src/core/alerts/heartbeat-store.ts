import type { Downtime } from './retry-outlook.js';

/** The receiver's last heartbeat and the last downtime it found. */
export interface HeartbeatRecord {
  /** When a podhook process last said it was up (epoch ms). */
  beatAt: number;
  downtime: Downtime | null;
}

/** Where heartbeats live: part of the one store interface (better-sqlite3 and D1 alike). */
export interface HeartbeatStore {
  readHeartbeat(): Promise<HeartbeatRecord | null>;
  /** Records a heartbeat at `beatAt`; with `downtime`, records it as the last downtime (else the last one stays). */
  writeHeartbeat(beatAt: number, downtime?: Downtime): Promise<void>;
}
